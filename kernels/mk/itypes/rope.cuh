// Rope(bcast[, x_bshd]) (docs/itypes.md): y = x * cos + rotate_half(x) * sin over an nd x rows x D box,
// fp32, rounded once. Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

// P: struct { static constexpr unsigned bcast; static constexpr bool x_bshd; }
template <class P>
struct RopeBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *x0 = idx, *y0 = idx + 4, *c0 = idx + 8;
    const int nd = idx[12], rows = idx[13], D = idx[14], h = D / 2;
    const SlotDesc& xs = c.slot(c.src_slot(0));
    const SlotDesc& cs = c.slot(c.src_slot(1));
    const SlotDesc& sn = c.slot(c.src_slot(2));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    const int n = nd * rows * D;
    for (int e = tid; e < n; e += kSimtThreads) {
      const int col = e % D, jr = e / D, r = jr % rows, j = jr / rows;
      // x_bshd: rows run along backing dim 1 (nd is 1).
      const long long xrow = P::x_bshd ? elem_offset(xs, x0[0], x0[1] + r, x0[2], x0[3])
                                       : elem_offset(xs, x0[0], x0[1] + j, x0[2] + r, x0[3]);
      const long long crow = elem_offset(cs, c0[0], c0[1] + ((P::bcast & 2u) ? 0 : j), c0[2] + ((P::bcast & 4u) ? 0 : r), c0[3]);
      const float xv = ld_f32(xs, xrow + col);
      const float rot = col < h ? -ld_f32(xs, xrow + col + h) : ld_f32(xs, xrow + col - h);
      st_f32(y, elem_offset(y, y0[0], y0[1] + j, y0[2] + r, y0[3] + col),
             xv * ld_f32(cs, crow + col) + rot * ld_f32(sn, crow + col));
    }
  }
};
template <class P>
using Rope = Simt<RopeBody<P>>;

}  // namespace mk
