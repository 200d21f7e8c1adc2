// Copy: materialise any view of a tensor (permuted, sliced, broadcast) as a fresh contiguous tensor,
// converting the dtype on the way. Resolved from aten _to_copy / clone, and inserted by the tracer in
// front of an IType that cannot read a view ([Note: view copies]). Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Copy final : public IType {
 public:
  // The backing dims the view's rows (padded view dim 2) and columns (dim 3) run along, -1 when that
  // view dim is 1 wide or a broadcast (one backing element). {2, 3} is the straight copy.
  struct Src {
    int8_t rows = 2, cols = 3;
    bool operator==(const Src&) const = default;
  };
  Copy() = default;
  explicit Copy(Src src);
  static Src src_for(const TensorRange&);
  const Src& src() const { return src_; }

  std::string name() const override { return "Copy"; }
  std::string params() const override;  // "" when straight, else "src=32", "src=13", "src=-3"
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange&, const Coord4&) const override { return true; }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  Src src_;
};

}  // namespace mk
