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
    const SlotDesc& xs = c.slot(c.src_slot(0));
    const SlotDesc& ys = c.slot(c.dst_slot(0));
    const TileView x[1] = {tile_view(xs, idx, P::rows, P::cols)};
    const TileView y = tile_view(ys, idx + 4, 2, 3);
    // nd tiles along view dim 1, which runs along backing dim idx[11] of x (-1: broadcast or 1 wide).
    const TileStack<1> st{idx[10], {dim_stride(xs, idx[11])}, dim_stride(ys, 1)};
    // Consecutive threads walk the dim that is contiguous in the source when rows run along it.
    tile_map(x, y, idx[8], idx[9], tid, P::rows == 3, [](const float (&v)[1]) { return v[0]; }, st);
  }
};
template <class P>
using Copy = Simt<CopyBody<P>>;

}  // namespace mk
