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
  require_inputs(n, 1);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  const TensorMeta& y = n.outputs[0];
  require_rank(n, "input x", x.shape(), 1, 4);
  require_float(n, "input x", x.dtype());
  require_float(n, "output", y.dtype);
  std::vector<int64_t> want(x.shape().begin(), x.shape().end() - 1);
  if (keepdim_) want.push_back(1);
  if (y.shape != want)
    fail("node '", n.name, "' (", n.target, "): output shape ", shape_str(y.shape), " must be ", shape_str(want),
         " (input ", shape_str(x.shape()), " reduced over its last dim", keepdim_ ? ", keepdim" : "", ")");
  require_tile_view(n, "input x", x);
}

int64_t RowReduce::num_instructions(const NodeInfo& n) const {
  const Coord4 s = n.inputs[0].padded();
  return num_row_tiles(s, rows_per_page(s[3], dtype_size(n.inputs[0].dtype()), n.profile));
}

InstrDesc RowReduce::instruction(const NodeInfo& n, int64_t i) const {
  const Coord4 s = n.inputs[0].padded();
  const int64_t C = s[3];
  const RowTile t = row_tile(s, rows_per_page(C, dtype_size(n.inputs[0].dtype()), n.profile), i);
  const Coord4& o = t.origin;
  const int64_t rows = t.rows;
  const Box ob = out_box(o, rows, keepdim_);
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(o));
  push_origin(d.indices, ob.lo);
  d.indices.push_back(static_cast<int32_t>(rows));
  d.indices.push_back(static_cast<int32_t>(C));
  d.reads = {{{o, {o[0] + 1, o[1] + 1, o[2] + rows, C}}}};
  d.writes = {{ob}};
  return d;
}

}  // namespace mk
