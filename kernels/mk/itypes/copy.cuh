// Copy(src) (docs/itypes.md): a tile of any view of a tensor, any dtype, into a contiguous tensor of a
// floating dtype. Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

// P: struct { static constexpr int rows, cols; } - the backing dims the view's rows and columns run
// along, -1 for a broadcast or 1-wide dim (Copy::Src).
template <class P>
struct CopyBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *x = idx, *oy = idx + 4;
    const int rows = idx[8], cols = idx[9];
    const SlotDesc& xs = c.slot(c.src_slot(0));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    // Consecutive threads walk the dim that is contiguous in the source when rows run along it.
    constexpr bool row_fast = P::rows == 3;
    for (int e = tid; e < rows * cols; e += kSimtThreads) {
      const int i = row_fast ? e % rows : e / cols, j = row_fast ? e / rows : e % cols;
      int p[4] = {x[0], x[1], x[2], x[3]};
      if constexpr (P::rows >= 0) p[P::rows] += i;
      if constexpr (P::cols >= 0) p[P::cols] += j;
      st_f32(y, elem_offset(y, oy[0], oy[1], oy[2] + i, oy[3] + j), ld_f32(xs, elem_offset(xs, p[0], p[1], p[2], p[3])));
    }
  }
};
template <class P>
using Copy = Simt<CopyBody<P>>;

}  // namespace mk
