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
    const TileView x[1] = {tile_view(c.slot(c.src_slot(0)), idx, P::rows, P::cols)};
    const TileView y = tile_view(c.slot(c.dst_slot(0)), idx + 4, 2, 3);
    // Consecutive threads walk the dim that is contiguous in the source when rows run along it.
    tile_map(x, y, idx[8], idx[9], tid, P::rows == 3, [](const float (&v)[1]) { return v[0]; });
  }
};
template <class P>
using Copy = Simt<CopyBody<P>>;

}  // namespace mk
