#include "itypes/row_reduce.h"

#include <algorithm>

#include "ir/error.h"

namespace mk {

namespace {

// The output box of input rows [r0, r0 + rows) at (b, d): (b, d, r0.., 0) with keepdim, else the
// output's padded dims are the input's shifted right by one: (0, b, d, r0..).
Box out_box(const Coord4& o, int64_t rows, bool keepdim) {
  if (keepdim) return {o, {o[0] + 1, o[1] + 1, o[2] + rows, 1}};
  return {{0, o[0], o[1], o[2]}, {1, o[0] + 1, o[1] + 1, o[2] + rows}};
}

}  // namespace

RowReduce::RowReduce(std::string op, bool keepdim) : op_(std::move(op)), keepdim_(keepdim) {
  if (op_ != "sum" && op_ != "mean" && op_ != "max")
    fail("RowReduce: unknown op '", op_, "' (expected sum, mean or max)");
}

void RowReduce::validate(const NodeInfo& n) const {
  require_row_operands(n, 1, false);
  const Operand& x = n.inputs[0];
  const TensorMeta& y = n.outputs[0];
  std::vector<int64_t> want(x.shape().begin(), x.shape().end() - 1);
  if (keepdim_) want.push_back(1);
  if (y.shape != want)
    fail("node '", n.name, "' (", n.target, "): output shape ", shape_str(y.shape), " must be ", shape_str(want),
         " (input ", shape_str(x.shape()), " reduced over its last dim", keepdim_ ? ", keepdim" : "", ")");
}

int64_t RowReduce::num_instructions(const NodeInfo& n) const { return num_page_row_tiles(n); }

InstrDesc RowReduce::instruction(const NodeInfo& n, int64_t i) const {
  const PageRowTile t = page_row_tile(n, i);
  const Coord4& o = t.tile.origin;
  const Box ob = out_box(o, t.tile.rows, keepdim_);
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(o));
  push_origin(d.indices, ob.lo);
  d.indices.push_back(static_cast<int32_t>(t.tile.rows));
  d.indices.push_back(static_cast<int32_t>(t.box.hi[3]));
  d.reads = {{t.box}};
  d.writes = {{ob}};
  return d;
}

}  // namespace mk
