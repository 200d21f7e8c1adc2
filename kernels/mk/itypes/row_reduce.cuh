// RowReduce(op, keepdim) (docs/itypes.md): sum, mean or max of each of `rows` rows of C elements, one
// warp per row; sums accumulated in fp64 as the reference does, rounded once; max NaN-propagating, as
// aten.amax (fmaxf would drop a NaN). Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

// P: struct { static constexpr bool mean, max, keepdim; }
template <class P>
struct RowReduceBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *x = idx, *oy = idx + 4;
    const int rows = idx[8], C = idx[9];
    const SlotDesc& xs = c.slot(c.src_slot(0));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    for (int r = tid / 32; r < rows; r += kConsumerWarps) {
      const long long row = elem_offset(xs, x[0], x[1], x[2] + r, x[3]);
      float v;
      if constexpr (P::max) {
        bool nan = false;
        const float mx = lane_max(xs, row, C, c.lane, nan);
        v = warp_max_nan(mx, nan);
      } else {
        double acc = 0;
        for (int e = c.lane; e < C; e += 32) acc += ld_f32(xs, row + e);
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, m);
        v = static_cast<float>(P::mean ? acc / C : acc);
      }
      if (c.lane == 0) {
        // keepdim: rows run along the output's dim 2, else along dim 3.
        st_f32(y, P::keepdim ? elem_offset(y, oy[0], oy[1], oy[2] + r, oy[3]) : elem_offset(y, oy[0], oy[1], oy[2], oy[3] + r), v);
      }
    }
  }
};
template <class P>
using RowReduce = Simt<RowReduceBody<P>>;

}  // namespace mk
