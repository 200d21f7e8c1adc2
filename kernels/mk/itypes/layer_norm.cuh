// LayerNorm(eps) (docs/itypes.md): each of `rows` rows of C elements normalised over the row, one warp per
// row, three passes over the row (global loads, L1-resident: sum, sum of squared deviations, write), fp32
// statistics, (x - mean) * rstd * w + b rounded once on store. Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

// P: struct { static constexpr float eps; static constexpr bool has_weight, has_bias; }
template <class P>
struct LayerNormBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *x = idx, *oy = idx + 4, *ow = idx + 8, *ob = idx + 11;
    const int rows = idx[14], C = idx[15];
    const SlotDesc& xs = c.slot(c.src_slot(0));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    // The weight's and bias' slots (the input's when absent: never read) and their first elements.
    const SlotDesc& ws = c.slot(c.src_slot(P::has_weight ? 1 : 0));
    const SlotDesc& bs = c.slot(c.src_slot(P::has_bias ? (P::has_weight ? 2 : 1) : 0));
    const long long w0 = P::has_weight ? elem_offset(ws, 0, ow[0], ow[1], ow[2]) : 0;
    const long long b0 = P::has_bias ? elem_offset(bs, 0, ob[0], ob[1], ob[2]) : 0;
    for (int r = tid / 32; r < rows; r += kConsumerWarps) {
      const long long row = elem_offset(xs, x[0], x[1], x[2] + r, x[3]);
      const long long out = elem_offset(y, oy[0], oy[1], oy[2] + r, oy[3]);
      float s = 0.f;
      for (int e = c.lane; e < C; e += 32) s += ld_f32(xs, row + e);
      const float mean = warp_sum_f32(s) / static_cast<float>(C);
      float ss = 0.f;
      for (int e = c.lane; e < C; e += 32) {
        const float d = ld_f32(xs, row + e) - mean;
        ss += d * d;
      }
      const float rstd = rsqrtf(warp_sum_f32(ss) / static_cast<float>(C) + P::eps);
      for (int e = c.lane; e < C; e += 32) {
        float v = (ld_f32(xs, row + e) - mean) * rstd;
        if constexpr (P::has_weight) v *= ld_f32(ws, w0 + e);
        if constexpr (P::has_bias) v += ld_f32(bs, b0 + e);
        st_f32(y, out + e, v);
      }
    }
  }
};
template <class P>
using LayerNorm = Simt<LayerNormBody<P>>;

}  // namespace mk
