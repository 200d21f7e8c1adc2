// RowReduce: sum, mean or max over the last dim (aten.sum.dim_IntList / aten.mean.dim / aten.amax with dim [-1]).
// Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class RowReduce final : public IType {
 public:
  // op: "sum", "mean" or "max" (NaN-propagating, as aten.amax); keepdim: the output keeps the reduced dim with size 1.
  RowReduce(std::string op, bool keepdim);
  const std::string& op() const { return op_; }
  bool keepdim() const { return keepdim_; }
  std::string name() const override { return "RowReduce"; }
  std::string params() const override { return "op=" + op_ + (keepdim_ ? ",keepdim" : ""); }
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  std::string op_;
  bool keepdim_;
};

}  // namespace mk
