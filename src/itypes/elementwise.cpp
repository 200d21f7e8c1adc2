#include "itypes/elementwise.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <limits>

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

int64_t ew_tiles(const Coord4& s, const Profile& p, int inputs) {
  if (p.ew_max_pages <= 0) return p.ew_tiles_per_instruction;
  // Bigger instructions keep more bytes in flight per SM; but not at the cost of idle SMs.
  const int64_t single = s[0] * s[1] * ceil_div(s[2], p.ew_tile_rows) * ceil_div(s[3], p.ew_tile_cols);
  const int64_t most = std::max(1, p.ew_max_pages / std::max(1, inputs));
  return std::clamp<int64_t>(ceil_div(single, std::max(1, p.num_sms)), 1, most);
}

int64_t ew_num_tiles(const Coord4& s, const Profile& p, int inputs) {
  const int64_t tc = int64_t(p.ew_tile_cols) * ew_tiles(s, p, inputs);
  return s[0] * s[1] * ceil_div(s[2], p.ew_tile_rows) * ceil_div(s[3], tc);
}

EwTile ew_tile(const Coord4& s, const Profile& p, int inputs, int64_t i) {
  const int64_t tr = p.ew_tile_rows, tc = int64_t(p.ew_tile_cols) * ew_tiles(s, p, inputs);
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
  // In UnaryStep::Op order.
  static const std::vector<std::string> ops = {
      "identity", "relu",       "abs",    "exp",   "exp2",       "log",        "log2",       "neg",
      "sqrt",     "rsqrt",      "silu",   "gelu",  "gelu_tanh",  "sigmoid",    "tanh",       "cos",
      "sin",      "reciprocal", "square", "erf",   "expm1",      "log1p",      "add_scalar", "mul_scalar",
      "div_scalar", "pow_scalar", "clamp_min", "clamp_max"};
  return ops;
}

namespace {
constexpr int kFirstScalarOp = static_cast<int>(UnaryStep::Op::add_scalar);

std::string supported_list() {
  std::string out;
  const auto& ok = ElementwiseUnary::supported_ops();
  for (size_t i = 0; i < ok.size(); ++i)
    out += (i ? ", " : "") + ok[i] + (static_cast<int>(i) >= kFirstScalarOp ? ":k" : "");
  return out;
}

std::string g9(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

std::string UnaryStep::with_constant(const std::string& name, double value) { return name + ":" + g9(value); }

UnaryStep UnaryStep::parse(const std::string& s) {
  const size_t colon = s.find(':');
  UnaryStep st;
  st.name = s.substr(0, colon);
  const auto& ok = ElementwiseUnary::supported_ops();
  const auto it = std::find(ok.begin(), ok.end(), st.name);
  if (it == ok.end()) fail("ElementwiseUnary: unknown op '", s, "'; supported ops: ", supported_list());
  const int code = static_cast<int>(it - ok.begin());
  st.op = static_cast<Op>(code);
  st.has_k = code >= kFirstScalarOp;
  if (!st.has_k) {
    if (colon != std::string::npos)
      fail("ElementwiseUnary: op '", st.name, "' takes no constant, got '", s, "'");
    st.text = st.name;
    return st;
  }
  if (colon == std::string::npos)
    fail("ElementwiseUnary: op '", st.name, "' needs a constant, e.g. '", st.name, ":2', got '", s, "'");
  const std::string num = s.substr(colon + 1);
  char* end = nullptr;
  const double v = num.empty() ? 0.0 : std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size())
    fail("ElementwiseUnary: the constant of '", s, "' is not a number");
  st.text = with_constant(st.name, v);
  st.k = static_cast<float>(std::strtod(st.text.c_str() + st.name.size() + 1, nullptr));  // from the text
  return st;
}

ElementwiseUnary::ElementwiseUnary(std::vector<std::string> ops) {
  if (ops.empty()) fail("ElementwiseUnary: empty op list; supported ops: ", supported_list());
  for (const auto& op : ops) {
    steps_.push_back(UnaryStep::parse(op));
    ops_.push_back(steps_.back().text);
  }
}

bool ElementwiseUnary::has_constants() const {
  return std::any_of(steps_.begin(), steps_.end(), [](const UnaryStep& s) { return s.has_k; });
}

std::string ElementwiseUnary::params() const { return "ops=" + join(ops_); }

void ElementwiseUnary::validate(const NodeInfo& n) const {
  require_inputs(n, 1);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  require_float(n, "input x", x.dtype());
  require_float(n, "output", n.outputs[0].dtype);
  require_rank(n, "input x", x.shape(), 1, 4);
  if (x.shape() != n.outputs[0].shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()),
         " must equal the output shape ", shape_str(n.outputs[0].shape));
  require_tile_view(n, "input x", x);
}

int64_t ElementwiseUnary::num_instructions(const NodeInfo& n) const {
  return ew_num_tiles(n.outputs[0].padded(), n.profile, 1);
}

InstrDesc ElementwiseUnary::instruction(const NodeInfo& n, int64_t i) const {
  const uint8_t none = 0;
  return ew_instruction(n, 1, &none, i);
}

// ---- ElementwiseBinary ----

const std::vector<std::string>& ElementwiseBinary::supported_ops() {
  static const std::vector<std::string> ops = {"add", "sub", "mul", "div", "maximum", "minimum", "select"};
  return ops;
}

ElementwiseBinary::ElementwiseBinary(std::string op, double alpha, bool inplace, Broadcast broadcast)
    : op_(std::move(op)), bop_(parse_binary_op(op_)), alpha_(alpha), inplace_(inplace), bcast_(broadcast) {
  for (uint8_t m : bcast_)
    if (m > 15) fail("ElementwiseBinary: broadcast mask ", int(m), " has bits beyond the 4 padded dims");
  if (inplace_ && bcast_[0])
    fail("ElementwiseBinary: in place, input a is the output and cannot broadcast");
}

const char* binary_op_name(BinaryOp op) { return ElementwiseBinary::supported_ops()[static_cast<int>(op)].c_str(); }

BinaryOp parse_binary_op(const std::string& name) {
  const auto& ok = ElementwiseBinary::supported_ops();  // in BinaryOp order
  const auto it = std::find(ok.begin(), ok.end(), name);
  if (it == ok.end()) fail("ElementwiseBinary: unknown op '", name, "'; supported ops: ", join(ok, ", "));
  return static_cast<BinaryOp>(it - ok.begin());
}

std::string broadcast_mask_text(uint8_t m) {
  std::string s;
  for (int d = 0; d < 4; ++d) s += (m >> d & 1) ? '1' : '0';
  return s;
}

namespace {
// d planes per instruction (ew_num_plane_tiles); 1 when a plane takes more than one tile.
int64_t plane_depth(const Coord4& s, const Profile& p, int64_t node_planes) {
  if (ew_num_tiles(s, p, 1) != s[0] * s[1]) return 1;
  const int64_t tile = int64_t(p.ew_tile_rows) * p.ew_tile_cols;
  const int64_t most = std::max<int64_t>(1, tile / std::max<int64_t>(1, s[2] * s[3]));
  const int64_t planes = node_planes < 0 ? s[0] * s[1] : node_planes;
  const int64_t spread = std::max<int64_t>(1, planes / std::max(1, p.num_sms));
  return std::min({most, spread, s[1]});
}
}  // namespace

int64_t ew_num_plane_tiles(const Coord4& s, const Profile& p, int64_t node_planes) {
  const int64_t nd = plane_depth(s, p, node_planes);
  return nd > 1 ? s[0] * ceil_div(s[1], nd) : ew_num_tiles(s, p, 1);
}

EwTile ew_plane_tile(const Coord4& s, const Profile& p, int64_t i, int64_t node_planes) {
  const int64_t depth = plane_depth(s, p, node_planes);
  if (depth == 1) return ew_tile(s, p, 1, i);
  const int64_t per_b = ceil_div(s[1], depth), d0 = (i % per_b) * depth;  // the whole planes [d0, d0 + nd)
  EwTile t;
  t.origin = {i / per_b, d0, 0, 0};
  t.rows = s[2];
  t.cols = s[3];
  t.planes = std::min(depth, s[1] - d0);
  return t;
}

uint8_t broadcast_mask(const TensorRange& r, const Coord4& out) {
  const Coord4 v = r.view_padded();
  uint8_t m = 0;
  for (int d = 0; d < 4; ++d)
    if ((v[d] == 1 && out[d] > 1) || (r.bcast[d] && v[d] > 1)) m |= uint8_t(1u << d);
  return m;
}

namespace {
std::string mask_text(uint8_t m) { return broadcast_mask_text(m); }
uint8_t mask_of(const TensorRange& r, const Coord4& out) { return broadcast_mask(r, out); }
}  // namespace

std::string ElementwiseBinary::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", alpha_);
  std::string p = "op=" + op_ + ",alpha=" + buf + (inplace_ ? ",inplace" : "");
  if (bcast_[0]) p += ",bcast_a=" + mask_text(bcast_[0]);
  if (bcast_[1]) p += ",bcast_b=" + mask_text(bcast_[1]);
  return p;
}

ElementwiseBinary::Broadcast ElementwiseBinary::broadcast_for(const TensorRange& a, const TensorRange& b,
                                                              Coord4* out_padded) {
  const Coord4 va = a.view_padded(), vb = b.view_padded();
  Coord4 out{};
  for (int d = 0; d < 4; ++d) {
    if (va[d] == vb[d] || vb[d] == 1) out[d] = va[d];
    else if (va[d] == 1) out[d] = vb[d];
    else
      fail("ElementwiseBinary: input a of shape ", shape_str(a.view_shape), " and input b of shape ",
           shape_str(b.view_shape), " do not broadcast (padded dim ", d, ": ", va[d], " vs ", vb[d], ")");
  }
  if (out_padded) *out_padded = out;
  return {mask_of(a, out), mask_of(b, out)};
}

void require_ew_operand(const NodeInfo& n, int k, const char* what, uint8_t mask) {
  const auto& y = n.outputs[0];
  const Coord4 out = y.padded();
  const Operand& x = n.inputs[k];
  require_float(n, what, x.dtype());
  require_rank(n, what, x.shape(), 0, 4);
  const Coord4 v = x.padded();
  bool ok = x.shape().size() <= y.shape.size();
  for (int d = 0; d < 4; ++d) ok &= v[d] == out[d] || v[d] == 1;
  if (!ok)
    fail("node '", n.name, "' (", n.target, "): ", what, " shape ", shape_str(x.shape()),
         " does not broadcast to the output shape ", shape_str(y.shape));
  const uint8_t m = mask_of(x.range, out);
  if (m != mask)
    fail("node '", n.name, "' (", n.target, "): ", what, " shape ", shape_str(x.shape()), " (view ",
         x.range.str(), ") broadcasts along padded dims ", mask_text(m), " to the output shape ",
         shape_str(y.shape), ", but the instruction type says ", mask_text(mask),
         m == 0 ? " (inputs of the output's shape need the plain form)" : "");
  // The tile the operand actually reads: extent 1 along its broadcast dims.
  Operand eff = x;
  const int pad = 4 - static_cast<int>(eff.range.view_shape.size());
  for (int d = pad; d < 4; ++d)
    if (m >> d & 1) eff.range.view_shape[d - pad] = 1, eff.range.bcast[d] = false;
  require_tile_view(n, what, eff);
}

bool ew_reads_view(const TensorRange& v) {
  TensorRange eff = v;  // a broadcast dim reads one element: its layout does not matter
  const int pad = 4 - static_cast<int>(v.view_shape.size());
  for (int d = pad; d < 4; ++d)
    if (v.bcast[d]) eff.view_shape[d - pad] = 1, eff.bcast[d] = false;
  return tile_view(eff);
}

InstrDesc ew_instruction(const NodeInfo& n, int inputs, const uint8_t* bcast, int64_t i) {
  const EwTile t = ew_tile(n.outputs[0].padded(), n.profile, inputs, i);
  const Box box = tile_box(t);
  InstrDesc d;
  d.reads.resize(inputs);
  for (int k = 0; k < inputs; ++k) {
    // A broadcast operand's tile starts at view coordinate 0 along its broadcast dims (its backing
    // point) and is 1 wide there.
    Box rb = box;
    for (int dim = 0; dim < 4; ++dim)
      if (bcast[k] >> dim & 1) rb.lo[dim] = 0, rb.hi[dim] = 1;
    push_origin(d.indices, n.inputs[k].origin(rb.lo));
    d.reads[k] = {rb};
  }
  // y is a whole tensor: output coords are slot coords. The scheduler aliases an in-place y to a's slot
  // only when a is the whole tensor too, so in place this is also where the kernel read a.
  push_origin(d.indices, t.origin);
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(t.cols));
  d.writes = {{box}};
  return d;
}

float binary_apply(BinaryOp op, float a, float b, float alpha) {
  switch (op) {
    case BinaryOp::add: return a + alpha * b;
    case BinaryOp::sub: return a - alpha * b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
    // torch.maximum/minimum propagate NaN.
    case BinaryOp::maximum: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : std::max(a, b);
    case BinaryOp::minimum: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : std::min(a, b);
    case BinaryOp::select: return a != 0.0f ? b : 0.0f;
  }
  return std::numeric_limits<float>::quiet_NaN();  // unreachable: parse_binary_op checks the name
}

void ElementwiseBinary::validate(const NodeInfo& n) const {
  require_inputs(n, 2);
  require_outputs(n, 1);
  require_float(n, "output", n.outputs[0].dtype);
  require_ew_operand(n, 0, "input a", bcast_[0]);
  require_ew_operand(n, 1, "input b", bcast_[1]);
}

bool ElementwiseBinary::reads_view(int, const TensorRange& v, const Coord4&) const { return ew_reads_view(v); }

int64_t ElementwiseBinary::num_instructions(const NodeInfo& n) const {
  return ew_num_tiles(n.outputs[0].padded(), n.profile, 2);
}

InstrDesc ElementwiseBinary::instruction(const NodeInfo& n, int64_t i) const {
  return ew_instruction(n, 2, bcast_.data(), i);
}

std::optional<int> ElementwiseBinary::inplace_input(int output) const {
  if (inplace_ && output == 0) return 0;
  return std::nullopt;
}

}  // namespace mk
