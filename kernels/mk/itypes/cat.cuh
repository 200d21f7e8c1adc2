// Cat(dim) (docs/itypes.md): one tile of input k, nd whole planes stacked along dim 1 when its planes are
// small, into its shifted box of the output (the y origin carries the shift). Plain loads and stores
// ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

struct CatBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const SlotDesc& xs = c.slot(c.src_slot(idx[0]));
    const SlotDesc& ys = c.slot(c.dst_slot(0));
    const TileView x[1] = {tile_view(xs, idx + 1, 2, 3)};
    const TileView y = tile_view(ys, idx + 5, 2, 3);
    const TileStack<1> st{idx[11], {dim_stride(xs, 1)}, dim_stride(ys, 1)};  // tile views: dim 1 is straight
    tile_map(x, y, idx[9], idx[10], tid, false, [](const float (&v)[1]) { return v[0]; }, st);
  }
};
using Cat = Simt<CatBody>;

}  // namespace mk
