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
  int64_t B, H, Sq, Hk, Sk, G, cq, QT;
};

AttnDims attn_dims(const NodeInfo& n) {
  const Coord4 q = n.inputs[0].padded(), k = n.inputs[1].padded();
  AttnDims a{q[0], q[1], q[2], k[1], k[2], std::max(1, n.cluster_size), n.profile.attn_cta_q, 0};
  a.QT = ceil_div(a.Sq, a.G * a.cq);
  return a;
}

}  // namespace

Attention::Attention(bool causal, double scale) : causal_(causal), scale_(scale) {
  if (!(scale > 0) || !std::isfinite(scale)) fail("Attention: scale must be a finite value > 0, got ", scale);
}

std::string Attention::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", scale_);
  return std::string("causal=") + (causal_ ? "1" : "0") + ",scale=" + buf;
}

void Attention::validate(const NodeInfo& n) const {
  require_inputs(n, 3);
  if (n.outputs.size() != 1)
    fail("node '", n.name, "' (", n.target, "): expects 1 output, got ", n.outputs.size());
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const Operand& op = n.inputs[i];
    require_dtype(n, names[i], op.dtype(), DType::bf16);
    require_rank(n, names[i], op.shape(), 4, 4);
    if (!op.range.is_full(op.backing.padded()))
      fail("node '", n.name, "' (", n.target, "): ", names[i], " must be a whole tensor (no sliced views), got ",
           op.range.str(), " of ", op.backing.str());
  }
  const auto& o = n.outputs[0];
  require_dtype(n, "output o", o.dtype, DType::bf16);
  const auto &q = n.inputs[0].shape(), &k = n.inputs[1].shape(), &v = n.inputs[2].shape();
  if (q[3] != 64 && q[3] != 128)
    fail("node '", n.name, "' (", n.target, "): head dim D must be 64 or 128, got D=", q[3]);
  if (k != v)
    fail("node '", n.name, "' (", n.target, "): k shape ", shape_str(k), " must equal v shape ", shape_str(v));
  if (k[0] != q[0] || k[3] != q[3])
    fail("node '", n.name, "' (", n.target, "): k ", shape_str(k), " must match q ", shape_str(q),
         " in batch and head dim");
  if (k[1] < 1 || q[1] % k[1] != 0)
    fail("node '", n.name, "' (", n.target, "): query heads H must be a multiple of KV heads Hk, got H=", q[1],
         ", Hk=", k[1]);
  if (k[2] < 1) fail("node '", n.name, "' (", n.target, "): Sk must be >= 1, got Sk=", k[2]);
  if (o.shape != q)
    fail("node '", n.name, "' (", n.target, "): output shape ", shape_str(o.shape), " must equal q shape ",
         shape_str(q));
}

int64_t Attention::num_instructions(const NodeInfo& n) const {
  const AttnDims a = attn_dims(n);
  return a.B * a.H * a.QT * a.G;
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
  const int64_t D = n.inputs[0].padded()[3];

  InstrDesc d;
  for (int64_t v : {t.b, t.h, hk, s0, q_rows, kv_end}) d.indices.push_back(static_cast<int32_t>(v));
  const bool pair = n.profile.attn_pair_tiles;
  const int64_t r0 = pair ? m0 : s0, r1 = pair ? std::min(a.Sq, m0 + a.G * a.cq) : s0 + q_rows;
  d.reads.resize(3);
  d.writes.resize(1);
  if (r1 > r0) {
    const Box q{{t.b, t.h, r0, 0}, {t.b + 1, t.h + 1, r1, D}};
    d.reads[0].push_back(q);
    d.writes[0].push_back(q);
  }
  if (kv_end > 0) {
    const Box kv{{t.b, hk, 0, 0}, {t.b + 1, hk + 1, kv_end, D}};
    d.reads[1].push_back(kv);
    d.reads[2].push_back(kv);
  }
  return d;
}

}  // namespace mk
