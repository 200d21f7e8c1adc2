// CPU reference semantics of Attention (docs/itypes.md): plain fp32 softmax with max subtraction; a masked
// Attention adds its mask's entry to each scaled score, and a row with every key at -inf is 0 (as
// PyTorch's _safe_softmax).
#include "itypes/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

namespace {
constexpr float kF16Lowest = -65504.f, kBf16Lowest = -3.38953139e38f;  // torch.finfo(float16 / bfloat16).min
}  // namespace

void Attention::execute(const Instruction& in, ExecContext& ctx) const {
  const int64_t b = in.indices[0], h = in.indices[1], hk = in.indices[2], s0 = in.indices[3];
  const int64_t q_rows = in.indices[4], kv_end = in.indices[5];
  if (q_rows <= 0) return;  // a rank past Sq: nothing of its own to compute
  const int64_t D = in.indices[6];
  // Rows s0.. of head h: backing box (b, h, s, d), or (b, s, h, d) for an operand stored as (B, S, H, D).
  auto rows = [&](int bit, int64_t head, int64_t lo, int64_t hi) {
    return (bshd_ & bit) ? Box{{b, lo, head, 0}, {b + 1, hi, head + 1, D}}
                         : Box{{b, head, lo, 0}, {b + 1, head + 1, hi, D}};
  };
  const std::vector<float> q = ctx.load(in.src_slot(0), rows(kBshdQ, h, s0, s0 + q_rows));
  const std::vector<float> k = kv_end > 0 ? ctx.load(in.src_slot(1), rows(kBshdK, hk, 0, kv_end)) : std::vector<float>{};
  const std::vector<float> v = kv_end > 0 ? ctx.load(in.src_slot(2), rows(kBshdV, hk, 0, kv_end)) : std::vector<float>{};
  // The mask (Bm, Hm, Sqm, Sk): a dim of extent 1 is broadcast ([Note: attention mask]).
  std::vector<float> mask;
  Coord4 mb{};
  if (masked_ && kv_end > 0) {
    mb = ctx.meta(in.src_slot(3)).padded();
    const int64_t bm = mb[0] > 1 ? b : 0, hm = mb[1] > 1 ? h : 0;
    const int64_t lo = mb[2] > 1 ? s0 : 0, hi = mb[2] > 1 ? s0 + q_rows : 1;
    mask = ctx.load(in.src_slot(3), Box{{bm, hm, lo, 0}, {bm + 1, hm + 1, hi, kv_end}});
  }
  const float scale = static_cast<float>(scale_), inf = std::numeric_limits<float>::infinity();
  // [Note: fp16 mask lowest] an fp16 mask entry at fp16's lowest finite value drops its key as bf16's and fp32's
  // lowest do: it stands for bf16's lowest, which absorbs any score in fp32.
  if (f16_)
    for (float& x : mask)
      if (x == kF16Lowest) x = kBf16Lowest;
  std::vector<float> o(q_rows * D, 0.f), p(kv_end);
  for (int64_t r = 0; r < q_rows; ++r) {
    const int64_t i = s0 + r;
    // Top-left aligned causal mask: query i sees keys 0..i.
    const int64_t n = causal_ ? std::min(kv_end, i + 1) : kv_end;
    const float* mrow = mask.empty() ? nullptr : mask.data() + (mb[2] > 1 ? r : 0) * kv_end;
    float mx = -inf;
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.f;
      for (int64_t c = 0; c < D; ++c) s += q[r * D + c] * k[j * D + c];
      p[j] = s * scale + (mrow ? mrow[j] : 0.f);
      mx = std::max(mx, p[j]);
    }
    if (masked_ && mx == -inf) continue;  // every key masked: a row of zeros
    float sum = 0.f;
    for (int64_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - mx);
    for (int64_t j = 0; j < n; ++j) {
      const float w = p[j] / sum;
      for (int64_t c = 0; c < D; ++c) o[r * D + c] += w * v[j * D + c];
    }
  }
  ctx.store(in.dst_slot(0), rows(kBshdO, h, s0, s0 + q_rows), o);
}

}  // namespace mk
