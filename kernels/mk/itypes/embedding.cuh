// Embedding (docs/itypes.md): `rows` output rows, row r = weight row ids[r]. An id outside [0, V) is
// reported (site 6: the host raises IndexError) and its row is not read. Plain loads and stores
// ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

struct EmbeddingBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *ids0 = idx, *w0 = idx + 4, *oy = idx + 8;
    const int rows = idx[12], C = idx[13], V = idx[14];
    const SlotDesc& w = c.slot(c.src_slot(0));
    const SlotDesc& ids = c.slot(c.src_slot(1));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    // One warp per row: the id is one broadcast load, the row a coalesced copy.
    for (int r = tid / 32; r < rows; r += kConsumerWarps) {
      const long long id = ld_i64(ids, elem_offset(ids, ids0[0], ids0[1], ids0[2], ids0[3] + r));
      if (id < 0 || id >= V) {
        if (c.lane == 0) report_data_error(c, static_cast<int>(id < -2147483647LL ? -2147483647LL : id > 2147483647LL ? 2147483647LL : id), V);
        continue;
      }
      const long long src = elem_offset(w, w0[0], w0[1], w0[2] + static_cast<int>(id), w0[3]);
      const long long dst = elem_offset(y, oy[0], oy[1], oy[2] + r, oy[3]);
      for (int e = c.lane; e < C; e += 32) st_f32(y, dst + e, ld_f32(w, src + e));
    }
  }
};
using Embedding = Simt<EmbeddingBody>;

}  // namespace mk
