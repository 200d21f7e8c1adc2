// Cat: join inputs along one dim (aten.cat); each instruction copies one tile of one input into its
// slice of the output. Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Cat final : public IType {
 public:
  // dim: the padded output dim (0..3) the inputs are joined along.
  explicit Cat(int dim);
  int dim() const { return dim_; }
  std::string name() const override { return "Cat"; }
  std::string params() const override { return "dim=" + std::to_string(dim_); }
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  int dim_;
};

}  // namespace mk
