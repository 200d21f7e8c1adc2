#include "itypes/rope.h"

#include "ir/error.h"
#include "itypes/elementwise.h"

namespace mk {

namespace {

constexpr int64_t kRows = 128;  // rows (of D elements) per instruction

// Every padded dim wider than 1 among d, r, c runs along the backing dim of the same index, and
// nothing broadcasts: origin + (j, r, c) offsets address the tile. Dim b is never iterated.
bool rope_view(const TensorRange& r) {
  const Coord4 v = r.view_padded();
  for (int k = 1; k < 4; ++k)
    if (v[k] > 1 && r.view_dim[k] != k) return false;
  return !r.has_broadcast();
}

// HF's q/k: rows along backing dim 1 and cols along dim 3, nothing broadcast; one d per instruction, so
// the backing dim d runs along does not matter (the origin carries it).
bool bshd_view(const TensorRange& r) {
  const Coord4 v = r.view_padded();
  return !r.has_broadcast() && (v[2] <= 1 || r.view_dim[2] == 1) && (v[3] <= 1 || r.view_dim[3] == 3);
}

// `r` with its broadcast view dims reduced to one element (they read one backing element anyway).
TensorRange drop_broadcast(TensorRange r) {
  const int pad = 4 - static_cast<int>(r.view_shape.size());
  for (int d = pad; d < 4; ++d)
    if (r.bcast[d]) r.view_shape[d - pad] = 1, r.bcast[d] = false;
  return r;
}

// Instruction i's tile of x (view coords): origin (b, d0, r0, 0), nd d values, rows rows, all D.
struct RopeTile {
  Coord4 origin;
  int64_t nd, rows;
};

RopeTile rope_tile(const Coord4& s, bool bshd, int64_t i) {
  const int64_t nd = Rope::d_per_instruction(s, bshd);
  RopeTile t;
  if (nd == 1) {
    const RowTile rt = row_tile(s, kRows, i);
    t.origin = rt.origin;
    t.nd = 1;
    t.rows = rt.rows;
  } else {
    const int64_t blocks = ceil_div(s[1], nd);
    t.origin = {i / blocks, (i % blocks) * nd, 0, 0};
    t.nd = std::min(nd, s[1] - t.origin[1]);
    t.rows = s[2];
  }
  return t;
}

}  // namespace

Rope::Rope(uint8_t cos_bcast, bool x_bshd, bool interleaved, bool half_tables)
    : bcast_(cos_bcast), x_bshd_(x_bshd), interleaved_(interleaved), half_(half_tables) {
  if (half_ && !interleaved_) fail("Rope: half_tables needs interleaved (the pairs share a table column)");
  if (bcast_ > 15) fail("Rope: broadcast mask ", int(bcast_), " has bits beyond the 4 padded dims");
}

std::string Rope::params() const {
  return "bcast=" + broadcast_mask_text(bcast_) + (x_bshd_ ? ",x_bshd" : "") + (interleaved_ ? ",interleaved" : "") +
         (half_ ? ",half_tables" : "");
}

bool Rope::bshd_for(const TensorRange& x) { return !rope_view(x) && bshd_view(x); }

bool Rope::half_for(const TensorRange& x, const TensorRange& cos) {
  return !x.view_shape.empty() && !cos.view_shape.empty() && cos.view_shape.back() * 2 == x.view_shape.back();
}

uint8_t Rope::mask_for(const TensorRange& x, const TensorRange& cos) {
  return broadcast_mask(cos, x.view_padded());
}

int64_t Rope::d_per_instruction(const Coord4& s, bool x_bshd) {
  return x_bshd || s[2] >= kRows ? 1 : std::max<int64_t>(1, kRows / std::max<int64_t>(1, s[2]));
}

void Rope::validate(const NodeInfo& n) const {
  require_inputs(n, 3);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  const Operand& cos = n.inputs[1];
  const Operand& sin = n.inputs[2];
  const auto& y = n.outputs[0];
  if (x.dtype() != DType::bf16 && x.dtype() != DType::f16 && x.dtype() != DType::f32)
    fail("node '", n.name, "' (", n.target, "): input x must be bfloat16, float16 or float32, got ",
         dtype_name(x.dtype()));
  require_dtype(n, "output", y.dtype, x.dtype());
  require_float(n, "cos", cos.dtype());
  require_float(n, "sin", sin.dtype());
  require_rank(n, "input x", x.shape(), 1, 4);
  if (x.shape() != y.shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()),
         " must equal the output shape ", shape_str(y.shape));
  const int64_t D = x.shape().back();
  if (D % 2 != 0)
    fail("node '", n.name, "' (", n.target, "): the last dim D of x must be even (", interleaved_ ? "pairs" : "halves",
         " rotate), got D=", D);
  if (cos.shape() != sin.shape())
    fail("node '", n.name, "' (", n.target, "): cos shape ", shape_str(cos.shape()), " must equal sin shape ",
         shape_str(sin.shape()));
  // One origin serves both tables: their views must address the same backing coordinates.
  if (cos.range != sin.range)
    fail("node '", n.name, "' (", n.target, "): sin view ", sin.range.str(), " must match cos view ",
         cos.range.str(), " (one index origin serves both)");
  const Coord4 xs = x.padded(), cs = cos.padded();
  const int64_t W = half_ ? D / 2 : D;  // the tables' last dim
  bool ok = cos.shape().size() <= x.shape().size() && !cos.shape().empty() && cos.shape().back() == W;
  for (int d = 0; d < 3; ++d) ok &= cs[d] == xs[d] || cs[d] == 1;
  if (!ok)
    fail("node '", n.name, "' (", n.target, "): cos/sin shape ", shape_str(cos.shape()),
         " must broadcast to x's shape ", shape_str(x.shape()), half_ ? " with half its last dim, D/2=" :
         " with the same last dim D=", W);
  const uint8_t m = mask_for(x.range, cos.range);
  if (m != bcast_)
    fail("node '", n.name, "' (", n.target, "): cos view ", cos.range.str(), " broadcasts along padded dims ",
         broadcast_mask_text(m), " over x ", shape_str(x.shape()), ", but the instruction type says ",
         broadcast_mask_text(bcast_));
  if (x_bshd_ ? !bshd_view(x.range) : !rope_view(x.range))
    fail("node '", n.name, "' (", n.target, "): input x view ", x.range.str(),
         x_bshd_ ? " must run its rows along backing dim 1 and its cols along dim 3 (x_bshd), without broadcasting"
                 : " must keep its last three dims on the backing tensor's own dims, without broadcasting");
  if (!rope_view(drop_broadcast(cos.range)))
    fail("node '", n.name, "' (", n.target, "): cos/sin view ", cos.range.str(),
         " must keep its non-broadcast dims among the last three on the backing tensor's own dims");
}

bool Rope::reads_view(int k, const TensorRange& v, const Coord4&) const {
  return k == 0 ? rope_view(v) || bshd_view(v) : rope_view(drop_broadcast(v));
}

int64_t Rope::num_instructions(const NodeInfo& n) const {
  const Coord4 s = n.inputs[0].padded();
  const int64_t nd = d_per_instruction(s, x_bshd_);
  return nd == 1 ? num_row_tiles(s, kRows) : s[0] * ceil_div(s[1], nd);
}

InstrDesc Rope::instruction(const NodeInfo& n, int64_t i) const {
  const Coord4 s = n.inputs[0].padded();
  const RopeTile t = rope_tile(s, x_bshd_, i);
  Box box;
  box.lo = t.origin;
  box.hi = {t.origin[0] + 1, t.origin[1] + t.nd, t.origin[2] + t.rows, s[3]};
  // cos/sin read extent 1 (at 0) along their broadcast dims; D/2 columns with half tables.
  Box cb = box;
  for (int d = 0; d < 4; ++d)
    if (bcast_ >> d & 1) cb.lo[d] = 0, cb.hi[d] = 1;
  if (half_) cb.hi[3] = s[3] / 2;
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(box.lo));
  push_origin(d.indices, box.lo);  // y is a whole tensor of x's shape: output coords are slot coords
  push_origin(d.indices, n.inputs[1].origin(cb.lo));
  d.indices.push_back(static_cast<int32_t>(t.nd));
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(s[3]));
  d.reads = {{box}, {cb}, {cb}};
  d.writes = {{box}};
  return d;
}

}  // namespace mk
