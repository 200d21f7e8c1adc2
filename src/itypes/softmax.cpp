#include "itypes/softmax.h"

#include "ir/error.h"

namespace mk {

Softmax::Softmax(bool log, bool safe) : log_(log), safe_(safe) {}

std::string Softmax::params() const {
  if (log_ && safe_) return "log,safe";
  return log_ ? "log" : safe_ ? "safe" : "";
}

void Softmax::validate(const NodeInfo& n) const {
  require_inputs(n, 1);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  const TensorMeta& y = n.outputs[0];
  require_rank(n, "input x", x.shape(), 1, 4);
  require_float(n, "input x", x.dtype());
  require_float(n, "output", y.dtype);
  if (x.shape() != y.shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()), " must equal the output shape ",
         shape_str(y.shape));
  require_tile_view(n, "input x", x);
}

int64_t Softmax::num_instructions(const NodeInfo& n) const {
  const Coord4 s = n.inputs[0].padded();
  return num_row_tiles(s, rows_per_page(s[3], dtype_size(n.inputs[0].dtype()), n.profile));
}

InstrDesc Softmax::instruction(const NodeInfo& n, int64_t i) const {
  const Coord4 s = n.inputs[0].padded();
  const int64_t C = s[3];
  const RowTile t = row_tile(s, rows_per_page(C, dtype_size(n.inputs[0].dtype()), n.profile), i);
  const Coord4& o = t.origin;
  const Box box{o, {o[0] + 1, o[1] + 1, o[2] + t.rows, C}};
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(o));
  push_origin(d.indices, o);
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(C));
  d.reads = {{box}};
  d.writes = {{box}};
  return d;
}

}  // namespace mk
