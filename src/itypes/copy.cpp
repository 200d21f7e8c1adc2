#include "itypes/copy.h"

#include <algorithm>

#include "ir/error.h"
#include "itypes/elementwise.h"  // the elementwise tiling

namespace mk {

namespace {
char dim_char(int8_t d) { return d < 0 ? '-' : static_cast<char>('0' + d); }
}  // namespace

Copy::Copy(Src src) : src_(src) {
  for (int8_t d : {src.rows, src.cols})
    if (d < -1 || d > 3) fail("Copy: backing dim ", int(d), " is not one of -1, 0..3");
  if (src.rows >= 0 && src.rows == src.cols) fail("Copy: rows and columns cannot run along one backing dim ", int(src.rows));
}

Copy::Src Copy::src_for(const TensorRange& r) {
  const Coord4 v = r.view_padded();
  auto dim = [&](int k) -> int8_t { return v[k] > 1 && !r.bcast[k] ? r.view_dim[k] : -1; };
  Src s{dim(2), dim(3)};
  // A 1-wide row/column dim reads one element wherever it runs: normalise to the straight form
  // when the other dim is straight, so that equal copies share an icode.
  if (s.rows == -1 && s.cols == 3 && v[2] == 1) s.rows = 2;
  if (s.cols == -1 && s.rows == 2 && v[3] == 1) s.cols = 3;
  if (s.rows == -1 && s.cols == -1 && v[2] == 1 && v[3] == 1) s = {};
  return s;
}

std::string Copy::params() const {
  if (src_ == Src{}) return "";
  return std::string("src=") + dim_char(src_.rows) + dim_char(src_.cols);
}

void Copy::validate(const NodeInfo& n) const {
  require_inputs(n, 1);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  const TensorMeta& y = n.outputs[0];
  require_rank(n, "input x", x.shape(), 0, 4);
  if (x.shape() != y.shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()), " must equal the output shape ",
         shape_str(y.shape));
  // Values pass through fp32: exact for every float and for integers up to 2^24, so integer outputs
  // (whose inputs could be larger) are not offered.
  require_float(n, "output", y.dtype);
  if (src_for(x.range) != src_)
    fail("node '", n.name, "' (", n.target, "): input x view ", x.range.str(), " needs ",
         Copy(src_for(x.range)).str(), ", but the instruction type is ", str());
}


int64_t Copy::num_instructions(const NodeInfo& n) const {
  return ew_num_plane_tiles(n.outputs[0].padded(), n.profile);
}

InstrDesc Copy::instruction(const NodeInfo& n, int64_t i) const {
  const EwTile t = ew_plane_tile(n.outputs[0].padded(), n.profile, i);
  const int64_t nd = t.planes;
  Box box;
  box.lo = t.origin;
  box.hi = {t.origin[0] + 1, t.origin[1] + nd, t.origin[2] + t.rows, t.origin[3] + t.cols};
  // The backing dim view dim 1 runs along, -1 when it reads one element (1 wide or a broadcast).
  const TensorRange& r = n.inputs[0].range;
  const int32_t xd = r.view_padded()[1] > 1 && !r.bcast[1] ? r.view_dim[1] : -1;
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(t.origin));
  push_origin(d.indices, t.origin);
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(t.cols));
  d.indices.push_back(static_cast<int32_t>(nd));
  d.indices.push_back(xd);
  d.reads = {{box}};  // view coords: the scheduler maps them (permuted, broadcast) onto the backing
  d.writes = {{box}};
  return d;
}

}  // namespace mk
