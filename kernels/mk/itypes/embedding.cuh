// Embedding (docs/itypes.md): `rows` output rows, row r = weight row ids[r]. An id outside [0, V) is
// reported (site 6: the host raises IndexError at the next launch, or at this one under `sync`) and its
// output row is NaN (no weight row is read): the call's result shows the error at once, as the asynchronous
// report cannot. Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

struct EmbeddingBody {
  // Copies C elements from w at src to y at dst, V at a time, on one warp.
  template <int V>
  static __device__ void copy_row(const TileView& w, long long src, const TileView& y, long long dst, int C, int lane) {
    chunked(lane, C / V, 32, [&](int e) { return ld_raw<V>(w, src + e * V); },
               [&](int e, const Raw<V>& l) {
                 float f[V];
                 to_f32<V>(w.dt, l, f);
                 st_vec<V>(y, dst + e * V, f);
               });
  }
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const int rows = idx[12], C = idx[13], V = idx[14];
    const SlotDesc& ids = c.slot(c.src_slot(1));
    const i32* ids0 = idx;
    // Row r of the weight tile starts at w.at(id, 0); of the output tile at y.at(r, 0).
    const TileView w = tile_view(c.slot(c.src_slot(0)), idx + 4, 2, 3);
    const TileView y = tile_view(c.slot(c.dst_slot(0)), idx + 8, 2, 3);
    const bool vec = C % 8 == 0 && vec8_ok(w) && vec8_ok(y) && w.cs == 1 && y.cs == 1;
    // One warp per row: the id is one broadcast load, the row a coalesced copy ([Note: SIMT chunks]).
    for (int r = tid / 32; r < rows; r += kConsumerWarps) {
      const long long id = ld_i64(ids, elem_offset(ids, ids0[0], ids0[1], ids0[2], ids0[3] + r));
      if (id < 0 || id >= V) {
        if (c.lane == 0) report_data_error(c, static_cast<int>(id < -2147483647LL ? -2147483647LL : id > 2147483647LL ? 2147483647LL : id), V);
        const float nan[1] = {__int_as_float(0x7fc00000)};
        for (int e = c.lane; e < C; e += 32) st_vec<1>(y, y.at(r, e), nan);
        continue;
      }
      const long long src = w.at(static_cast<int>(id), 0), dst = y.at(r, 0);
      if (vec) copy_row<8>(w, src, y, dst, C, c.lane);
      else copy_row<1>(w, src, y, dst, C, c.lane);
    }
  }
};
using Embedding = Simt<EmbeddingBody>;

}  // namespace mk
