// Softmax(log, safe) (docs/itypes.md): softmax or log-softmax of each of `rows` rows of C elements, one warp
// per row, three passes over the row through plain loads (L1-resident: max, sum of exponentials, write),
// fp32, rounded once on store. A NaN anywhere in a row makes it NaN (the max is NaN, as torch's); safe: a
// row whose max is -inf (every entry masked) is written as zeros. [Note: SIMT bodies].
#pragma once
#include "mk/simt.cuh"

namespace mk {

// P: struct { static constexpr bool log, safe; }
template <class P>
struct SoftmaxBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *x = idx, *oy = idx + 4;
    const int rows = idx[8], C = idx[9];
    const SlotDesc& xs = c.slot(c.src_slot(0));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    const float inf = __int_as_float(0x7f800000);
    for (int r = tid / 32; r < rows; r += kConsumerWarps) {
      const long long row = elem_offset(xs, x[0], x[1], x[2] + r, x[3]);
      const long long out = elem_offset(y, oy[0], oy[1], oy[2] + r, oy[3]);
      bool nan = false;
      const float m = warp_max_nan(lane_max(xs, row, C, c.lane, nan), nan);
      if (P::safe && m == -inf) {
        for (int e = c.lane; e < C; e += 32) st_f32(y, out + e, 0.f);
        continue;
      }
      float s = 0.f;
      for (int e = c.lane; e < C; e += 32) s += __expf(ld_f32(xs, row + e) - m);
      s = warp_sum_f32(s);
      const float ls = __logf(s), inv = __frcp_rn(s);
      for (int e = c.lane; e < C; e += 32) {
        const float d = ld_f32(xs, row + e) - m;
        st_f32(y, out + e, P::log ? d - ls : __expf(d) * inv);
      }
    }
  }
};
template <class P>
using Softmax = Simt<SoftmaxBody<P>>;

}  // namespace mk
