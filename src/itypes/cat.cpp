#include "itypes/cat.h"

#include "ir/error.h"
#include "itypes/elementwise.h"  // the elementwise tiling

namespace mk {

Cat::Cat(int dim) : dim_(dim) {
  if (dim < 0 || dim > 3) fail("Cat: dim ", dim, " is not a padded dim 0..3");
}

void Cat::validate(const NodeInfo& n) const {
  require_outputs(n, 1);
  if (n.inputs.empty()) fail("node '", n.name, "' (", n.target, "): needs at least one tensor to join");
  const TensorMeta& y = n.outputs[0];
  require_float(n, "output", y.dtype);
  const int rank = static_cast<int>(y.shape.size());
  if (rank < 4 - dim_)
    fail("node '", n.name, "' (", n.target, "): dim ", dim_ - (4 - rank), " is out of range for the rank-", rank, " output");
  const Coord4 out = y.padded();
  int64_t total = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Operand& x = n.inputs[k];
    const std::string what = "input " + std::to_string(k);
    require_float(n, what.c_str(), x.dtype());
    const Coord4 v = x.padded();
    bool ok = x.shape().size() == y.shape.size();
    for (int d = 0; d < 4; ++d) ok &= d == dim_ || v[d] == out[d];
    if (!ok)
      fail("node '", n.name, "' (", n.target, "): ", what, " shape ", shape_str(x.shape()),
           " must equal the output shape ", shape_str(y.shape), " except along dim ", dim_ - (4 - rank));
    total += v[dim_];
    require_tile_view(n, what.c_str(), x);
  }
  if (total != out[dim_])
    fail("node '", n.name, "' (", n.target, "): the inputs sum to ", total, " along dim ", dim_ - (4 - rank),
         ", the output has ", out[dim_]);
}

namespace {
// Input x's tiles: whole planes stacked along view dim 1 when that dim runs along backing dim 1 (the body
// steps by the backing dim 1 stride: tile views fix only rows and columns), else one plane each.
// The SMs share the planes of all inputs (a convolution's 9 or 49 taps), so an input stacks more of them.
bool stacks(const Operand& x) { return x.range.view_padded()[1] == 1 || x.range.view_dim[1] == 1; }

int64_t node_planes(const NodeInfo& n) {
  int64_t planes = 0;
  for (const Operand& x : n.inputs) planes += x.padded()[0] * x.padded()[1];
  return planes;
}

int64_t num_tiles(const Operand& x, const NodeInfo& n) {
  return stacks(x) ? ew_num_plane_tiles(x.padded(), n.profile, node_planes(n)) : ew_num_tiles(x.padded(), n.profile, 1);
}
}  // namespace

int64_t Cat::num_instructions(const NodeInfo& n) const {
  int64_t count = 0;
  for (const Operand& x : n.inputs) count += num_tiles(x, n);
  return count;
}

InstrDesc Cat::instruction(const NodeInfo& n, int64_t i) const {
  // Input k's tiles, in input order; `offset` is where input k starts along dim_.
  int64_t k = 0, offset = 0;
  for (; k < static_cast<int64_t>(n.inputs.size()); ++k) {
    const int64_t tiles = num_tiles(n.inputs[k], n);
    if (i < tiles) break;
    i -= tiles;
    offset += n.inputs[k].padded()[dim_];
  }
  const Operand& x = n.inputs[k];
  const EwTile t = stacks(x) ? ew_plane_tile(x.padded(), n.profile, i, node_planes(n)) : ew_tile(x.padded(), n.profile, 1, i);
  Box src;
  src.lo = t.origin;
  src.hi = {t.origin[0] + 1, t.origin[1] + t.planes, t.origin[2] + t.rows, t.origin[3] + t.cols};
  Box dst = src;
  dst.lo[dim_] += offset;
  dst.hi[dim_] += offset;
  InstrDesc d;
  d.indices.push_back(static_cast<int32_t>(k));
  push_origin(d.indices, n.inputs[k].origin(t.origin));
  push_origin(d.indices, dst.lo);
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(t.cols));
  d.indices.push_back(static_cast<int32_t>(t.planes));
  d.reads.resize(n.inputs.size());
  d.reads[k] = {src};
  d.writes = {{dst}};
  return d;
}

}  // namespace mk
