#include "itypes/elementwise.h"

#include <algorithm>
#include <cstdio>

#include "ir/error.h"

namespace mk {

namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// The tile's box in view/output coordinates.
Box tile_box(const EwTile& t) {
  Box b;
  b.lo = t.origin;
  b.hi = {t.origin[0] + 1, t.origin[1] + 1, t.origin[2] + t.rows, t.origin[3] + t.cols};
  return b;
}

}  // namespace

int64_t ew_num_tiles(const Coord4& s, const Profile& p) {
  const int64_t tc = int64_t(p.ew_tile_cols) * p.ew_tiles_per_instruction;
  return s[0] * s[1] * ceil_div(s[2], p.ew_tile_rows) * ceil_div(s[3], tc);
}

EwTile ew_tile(const Coord4& s, const Profile& p, int64_t i) {
  const int64_t tr = p.ew_tile_rows, tc = int64_t(p.ew_tile_cols) * p.ew_tiles_per_instruction;
  const int64_t nr = ceil_div(s[2], tr), nc = ceil_div(s[3], tc);
  const int64_t ct = i % nc, rt = (i / nc) % nr, d = (i / nc / nr) % s[1], b = i / (nc * nr * s[1]);
  EwTile t;
  t.origin = {b, d, rt * tr, ct * tc};
  t.rows = std::min(tr, s[2] - t.origin[2]);
  t.cols = std::min(tc, s[3] - t.origin[3]);
  return t;
}

// ---- ElementwiseUnary ----

const std::vector<std::string>& ElementwiseUnary::supported_ops() {
  static const std::vector<std::string> ops = {"identity", "relu", "abs", "exp", "exp2",
                                               "log",      "log2", "neg", "sqrt", "rsqrt"};
  return ops;
}

ElementwiseUnary::ElementwiseUnary(std::vector<std::string> ops) : ops_(std::move(ops)) {
  const auto& ok = supported_ops();
  if (ops_.empty()) fail("ElementwiseUnary: empty op list; supported ops: ", join(ok, ", "));
  for (const auto& op : ops_)
    if (std::find(ok.begin(), ok.end(), op) == ok.end())
      fail("ElementwiseUnary: unknown op '", op, "'; supported ops: ", join(ok, ", "));
}

std::string ElementwiseUnary::params() const { return "ops=" + join(ops_); }

void ElementwiseUnary::validate(const NodeInfo& n) const {
  require_inputs(n, 1);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  require_dtype(n, "input x", x.dtype(), DType::bf16);
  require_dtype(n, "output", n.outputs[0].dtype, DType::bf16);
  require_rank(n, "input x", x.shape(), 1, 4);
  if (x.shape() != n.outputs[0].shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()),
         " must equal the output shape ", shape_str(n.outputs[0].shape));
  require_tile_view(n, "input x", x);
}

int64_t ElementwiseUnary::num_instructions(const NodeInfo& n) const {
  return ew_num_tiles(n.outputs[0].padded(), n.profile);
}

InstrDesc ElementwiseUnary::instruction(const NodeInfo& n, int64_t i) const {
  const EwTile t = ew_tile(n.outputs[0].padded(), n.profile, i);
  const Box box = tile_box(t);
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(t.origin));
  push_origin(d.indices, t.origin);  // outputs are whole tensors: output coords are backing coords
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(t.cols));
  d.reads = {{box}};
  d.writes = {{box}};
  return d;
}

// ---- ElementwiseBinary ----

const std::vector<std::string>& ElementwiseBinary::supported_ops() {
  static const std::vector<std::string> ops = {"add", "sub", "mul", "div", "maximum", "minimum"};
  return ops;
}

ElementwiseBinary::ElementwiseBinary(std::string op, double alpha, bool inplace)
    : op_(std::move(op)), alpha_(alpha), inplace_(inplace) {
  const auto& ok = supported_ops();
  if (std::find(ok.begin(), ok.end(), op_) == ok.end())
    fail("ElementwiseBinary: unknown op '", op_, "'; supported ops: ", join(ok, ", "));
}

std::string ElementwiseBinary::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", alpha_);
  return "op=" + op_ + ",alpha=" + buf + (inplace_ ? ",inplace" : "");
}

void ElementwiseBinary::validate(const NodeInfo& n) const {
  require_inputs(n, 2);
  require_outputs(n, 1);
  const auto& y = n.outputs[0];
  require_dtype(n, "output", y.dtype, DType::bf16);
  const char* names[2] = {"input a", "input b"};
  for (int k = 0; k < 2; ++k) {
    const Operand& x = n.inputs[k];
    require_dtype(n, names[k], x.dtype(), DType::bf16);
    require_rank(n, names[k], x.shape(), 1, 4);
    if (x.shape() != y.shape)
      fail("node '", n.name, "' (", n.target, "): ", names[k], " shape ", shape_str(x.shape()),
           " must equal the output shape ", shape_str(y.shape), " (broadcasting is not supported yet)");
    require_tile_view(n, names[k], x);
  }
}

int64_t ElementwiseBinary::num_instructions(const NodeInfo& n) const {
  return ew_num_tiles(n.outputs[0].padded(), n.profile);
}

InstrDesc ElementwiseBinary::instruction(const NodeInfo& n, int64_t i) const {
  const EwTile t = ew_tile(n.outputs[0].padded(), n.profile, i);
  const Box box = tile_box(t);
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(t.origin));
  push_origin(d.indices, n.inputs[1].origin(t.origin));
  // y is a whole tensor: output coords are slot coords. The scheduler aliases y to a's slot only
  // when a is the whole tensor too, so in place this is also where the kernel read a.
  push_origin(d.indices, t.origin);
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(t.cols));
  d.reads = {{box}, {box}};
  d.writes = {{box}};
  return d;
}

std::optional<int> ElementwiseBinary::inplace_input(int output) const {
  if (inplace_ && output == 0) return 0;
  return std::nullopt;
}

}  // namespace mk
