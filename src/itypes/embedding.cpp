#include "itypes/embedding.h"

#include <algorithm>

#include "ir/error.h"

namespace mk {

void Embedding::validate(const NodeInfo& n) const {
  require_inputs(n, 2);
  require_outputs(n, 1);
  const Operand &w = n.inputs[0], &ids = n.inputs[1];
  const TensorMeta& y = n.outputs[0];
  require_rank(n, "weight", w.shape(), 2, 2);
  require_float(n, "weight", w.dtype());
  // megakittens.embedding also takes fp32 ids: integer values below 2^24 that megakittens/float_ids.py
  // computes in fp32 (no instruction type writes integers); the reference and the device load any dtype.
  const bool float_ids = n.target == "megakittens.embedding.default" && ids.dtype() == DType::f32;
  if (ids.dtype() != DType::i64 && ids.dtype() != DType::i32 && !float_ids)
    fail("node '", n.name, "' (", n.target, "): indices must be int64 or int32, got ", dtype_name(ids.dtype()));
  require_rank(n, "indices", ids.shape(), 0, 3);
  std::vector<int64_t> want = ids.shape();
  want.push_back(w.shape()[1]);
  if (y.shape != want)
    fail("node '", n.name, "' (", n.target, "): output shape ", shape_str(y.shape), " must be the indices' shape + [C] = ",
         shape_str(want));
  require_dtype(n, "output", y.dtype, w.dtype());
  require_tile_view(n, "weight", w);
  require_tile_view(n, "indices", ids);
}

int64_t Embedding::num_instructions(const NodeInfo& n) const {
  const Coord4 s = n.outputs[0].padded();
  return num_row_tiles(s, rows_per_page(s[3], dtype_size(n.outputs[0].dtype), n.profile));
}

InstrDesc Embedding::instruction(const NodeInfo& n, int64_t i) const {
  const Coord4 s = n.outputs[0].padded();
  const int64_t C = s[3], V = n.inputs[0].shape()[0];
  const RowTile t = row_tile(s, rows_per_page(C, dtype_size(n.outputs[0].dtype), n.profile), i);
  // Output point (b, d, r, c) reads id (0, b, d, r): the ids' padded dims are the output's shifted by one.
  const Coord4 io{0, t.origin[0], t.origin[1], t.origin[2]};
  InstrDesc d;
  push_origin(d.indices, n.inputs[1].origin(io));
  push_origin(d.indices, n.inputs[0].origin({0, 0, 0, 0}));
  push_origin(d.indices, t.origin);
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(C));
  d.indices.push_back(static_cast<int32_t>(V));
  d.reads = {{Box::of_shape(n.inputs[0].padded())},  // any row of the table
             {{io, {io[0] + 1, io[1] + 1, io[2] + 1, io[3] + t.rows}}}};
  d.writes = {{{t.origin, {t.origin[0] + 1, t.origin[1] + 1, t.origin[2] + t.rows, C}}}};
  return d;
}

}  // namespace mk
