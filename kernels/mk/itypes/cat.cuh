// Cat(dim) (docs/itypes.md): one tile of input k into its shifted box of the output (the y origin
// carries the shift). Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

struct CatBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const TileView x[1] = {tile_view(c.slot(c.src_slot(idx[0])), idx + 1, 2, 3)};
    const TileView y = tile_view(c.slot(c.dst_slot(0)), idx + 5, 2, 3);
    tile_map(x, y, idx[9], idx[10], tid, false, [](const float (&v)[1]) { return v[0]; });
  }
};
using Cat = Simt<CatBody>;

}  // namespace mk
