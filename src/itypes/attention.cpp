#include "itypes/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ir/error.h"

namespace mk {

namespace {

// One instruction's place in the node: (b, h), cluster tile qt (ascending, or descending when causal
// so the longest rows start first), rank.
struct AttnTile {
  int64_t b, h, qt, rank;
};

struct AttnDims {
  int64_t B, H, Sq, Hk, Sk, D, G, cq, QT;
};

AttnDims attn_dims(const NodeInfo& n) {
  const Coord4 q = n.inputs[0].padded(), k = n.inputs[1].padded();
  AttnDims a{q[0], q[1], q[2], k[1], k[2], q[3], std::max(1, n.cluster_size), n.profile.attn_cta_q, 0};
  a.QT = ceil_div(a.Sq, a.G * a.cq);
  return a;
}

// A (B, H, S, D) view that is the transpose(1, 2) of a whole (B, S, H, D) backing tensor: view dims
// b, h, s, d run along backing dims 0, 2, 1, 3 (size-1 dims may run anywhere).
bool is_bshd(const TensorRange& r, const Coord4& backing) {
  static constexpr int8_t kDim[4] = {0, 2, 1, 3};
  const Coord4 v = r.view_padded();
  if (r.has_broadcast() || r.view_shape.size() != 4 || !(r.box == Box::of_shape(backing))) return false;
  for (int i = 0; i < 4; ++i)
    if (v[i] != backing[kDim[i]] || (v[i] > 1 && r.view_dim[i] != kDim[i])) return false;
  return true;
}

}  // namespace

Attention::Attention(bool causal, double scale, unsigned bshd, bool masked, bool f16)
    : causal_(causal), scale_(scale), bshd_(bshd), masked_(masked), f16_(f16) {
  if (!(scale > 0) || !std::isfinite(scale)) fail("Attention: scale must be a finite value > 0, got ", scale);
  if (bshd > 15) fail("Attention: bshd mask must be in 0..15, got ", bshd);
}

std::string Attention::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", scale_);
  std::string s = std::string("causal=") + (causal_ ? "1" : "0") + ",scale=" + buf;
  if (bshd_) {
    s += ",bshd=";
    for (int i = 0; i < 4; ++i)
      if (bshd_ & (1u << i)) s += "qkvo"[i];
  }
  if (masked_) s += ",mask=add";
  if (f16_) s += ",f16";
  return s;
}

unsigned Attention::bshd_for(const std::vector<TensorRange>& views) {
  unsigned m = 0;
  for (size_t i = 0; i < views.size() && i < 3; ++i) {
    const TensorRange& r = views[i];
    if (r.is_straight() || r.view_shape.size() != 4) continue;
    // The backing (B, S, H, D) is the view's shape with dims 1 and 2 swapped.
    const Coord4 v = r.view_padded();
    if (is_bshd(r, Coord4{v[0], v[2], v[1], v[3]})) m |= 1u << i;
  }
  return m;
}

bool Attention::mask_view(const TensorRange& r, const Coord4& backing) {
  if (r.view_shape.size() > 4 || !(r.box == Box::of_shape(backing))) return false;
  const Coord4 v = r.view_padded();
  for (int i = 0; i < 4; ++i) {
    const bool wide = v[i] > 1 && !r.bcast[i];
    if (wide ? (r.view_dim[i] != i || backing[i] != v[i]) : (backing[i] != 1 || (i == 3 && v[i] > 1))) return false;
  }
  return true;
}

bool Attention::reads_view(int k, const TensorRange& view, const Coord4& backing) const {
  if (k == 3) return mask_view(view, backing);
  return view.is_full(backing) || is_bshd(view, backing);
}

void Attention::validate(const NodeInfo& n) const {
  require_inputs(n, masked_ ? 4 : 3);
  if (n.outputs.size() != 1)
    fail("node '", n.name, "' (", n.target, "): expects 1 output, got ", n.outputs.size());
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const Operand& op = n.inputs[i];
    require_dtype(n, names[i], op.dtype(), half_dtype(f16_));
    require_rank(n, names[i], op.shape(), 4, 4);
    const Coord4 bp = op.backing.padded();
    const bool ok = (bshd_ & (1u << i)) ? is_bshd(op.range, bp) : op.range.is_full(bp);
    if (!ok)
      fail("node '", n.name, "' (", n.target, "): ", names[i],
           " must be a whole (B, H, S, D) tensor or the transpose(1, 2) of a whole (B, S, H, D) tensor (no "
           "sliced, broadcast or otherwise permuted views), got ",
           op.range.str(), " of ", op.backing.str());
  }
  const auto& o = n.outputs[0];
  require_dtype(n, "output o", o.dtype, half_dtype(f16_));
  const auto &q = n.inputs[0].shape(), &k = n.inputs[1].shape(), &v = n.inputs[2].shape();
  if (q[3] != 64 && q[3] != 128)
    fail("node '", n.name, "' (", n.target, "): head dim D must be 64 or 128, got D=", q[3],
         " (fallback=\"eager\" runs this attention as a torch op)");
  if (k != v)
    fail("node '", n.name, "' (", n.target, "): k shape ", shape_str(k), " must equal v shape ", shape_str(v));
  if (k[0] != q[0] || k[3] != q[3])
    fail("node '", n.name, "' (", n.target, "): k ", shape_str(k), " must match q ", shape_str(q),
         " in batch and head dim");
  if (k[1] < 1 || q[1] % k[1] != 0)
    fail("node '", n.name, "' (", n.target, "): query heads H must be a multiple of KV heads Hk, got H=", q[1],
         ", Hk=", k[1]);
  if (k[2] < 1) fail("node '", n.name, "' (", n.target, "): Sk must be >= 1, got Sk=", k[2]);
  const std::vector<int64_t> want = (bshd_ & kBshdO) ? std::vector<int64_t>{q[0], q[2], q[1], q[3]} : q;
  if (o.shape != want)
    fail("node '", n.name, "' (", n.target, "): output shape ", shape_str(o.shape), " must be ", shape_str(want),
         (bshd_ & kBshdO) ? " ((B, S, H, D) of q's (B, H, S, D): flag bshd=o)" : " (q's shape)");
  if (!masked_) return;
  const Operand& m = n.inputs[3];
  require_dtype(n, "attn_mask", m.dtype(), half_dtype(f16_));
  const std::vector<int64_t> mwant{q[0], q[1], q[2], k[2]};
  bool fits = m.shape().size() == 4 && m.shape()[3] == k[2];
  for (int i = 0; i < 3 && fits; ++i) fits = m.shape()[i] == mwant[i] || m.shape()[i] == 1;
  if (!fits || !mask_view(m.range, m.backing.padded()))
    fail("node '", n.name, "' (", n.target, "): attn_mask must be a whole (B|1, H|1, Sq|1, Sk) tensor, seen as "
         "such or broadcast to ", shape_str(mwant), " (B, H, Sq, Sk), got ", m.range.str(), " of ", m.backing.str());
}

int64_t Attention::num_instructions(const NodeInfo& n) const {
  const AttnDims a = attn_dims(n);
  return a.B * a.H * a.QT * a.G;
}

double Attention::cost(const NodeInfo& n, const InstrDesc& d) const {
  if (!causal_ || d.indices.size() < 6) return 0;
  return static_cast<double>(d.indices[5]) + static_cast<double>(attn_dims(n).cq);  // kv_end + one q tile
}

InstrDesc Attention::instruction(const NodeInfo& n, int64_t i) const {
  const AttnDims a = attn_dims(n);
  AttnTile t;
  t.rank = i % a.G;
  int64_t c = i / a.G;
  const int64_t qi = c % a.QT;
  c /= a.QT;
  t.h = c % a.H;
  t.b = c / a.H;
  t.qt = causal_ ? a.QT - 1 - qi : qi;
  const int64_t hk = t.h / (a.H / a.Hk);
  const int64_t m0 = t.qt * a.G * a.cq, s0 = m0 + t.rank * a.cq;
  const int64_t q_rows = std::clamp<int64_t>(a.Sq - s0, 0, a.cq);
  // Causal: keys past the rank's last query row are all masked (top-left aligned).
  const int64_t kv_end = causal_ ? std::min(a.Sk, s0 + q_rows) : a.Sk;

  InstrDesc d;
  for (int64_t v : {t.b, t.h, hk, s0, q_rows, kv_end, a.D}) d.indices.push_back(static_cast<int32_t>(v));
  const bool pair = n.profile.attn_pair_tiles;
  const int64_t r0 = pair ? m0 : s0, r1 = pair ? std::min(a.Sq, m0 + a.G * a.cq) : s0 + q_rows;
  d.reads.resize(masked_ ? 4 : 3);
  d.writes.resize(1);
  if (r1 > r0) {
    const Box q{{t.b, t.h, r0, 0}, {t.b + 1, t.h + 1, r1, a.D}};
    d.reads[0].push_back(q);
    // The mask rows of these queries, keys [0, kv_end) (the device loads no column past kv_end).
    if (masked_ && kv_end > 0) {
      const Coord4 m = n.inputs[3].padded();  // a dim of extent 1 broadcasts
      const int64_t mb = m[0] > 1 ? t.b : 0, mh = m[1] > 1 ? t.h : 0, m0 = m[2] > 1 ? r0 : 0, m1 = m[2] > 1 ? r1 : 1;
      d.reads[3].push_back(Box{{mb, mh, m0, 0}, {mb + 1, mh + 1, m1, kv_end}});
    }
    d.writes[0].push_back((bshd_ & kBshdO) ? Box{{t.b, r0, t.h, 0}, {t.b + 1, r1, t.h + 1, a.D}} : q);
  }
  if (kv_end > 0) {
    // [Note: attention kv blocks] the device loads K/V in whole blocks of attn_kv_block rows; the rows
    // past kv_end in the last block are masked but multiplied (P = 0 times V), so they must be written.
    const int64_t kb = std::max(1, n.profile.attn_kv_block);
    const int64_t rows = std::min(a.Sk, ceil_div(kv_end, kb) * kb);
    const Box kv{{t.b, hk, 0, 0}, {t.b + 1, hk + 1, rows, a.D}};
    d.reads[1].push_back(kv);
    d.reads[2].push_back(kv);
  }
  return d;
}

}  // namespace mk
