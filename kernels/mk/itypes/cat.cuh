// Cat(dim) (docs/itypes.md): one tile of input k into its shifted box of the output (the y origin
// carries the shift). Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

namespace mk {

struct CatBody {
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const i32 *x = idx + 1, *oy = idx + 5;
    const int rows = idx[9], cols = idx[10];
    const SlotDesc& xs = c.slot(c.src_slot(idx[0]));
    const SlotDesc& y = c.slot(c.dst_slot(0));
    for (int e = tid; e < rows * cols; e += kSimtThreads) {
      const int i = e / cols, j = e - i * cols;
      st_f32(y, elem_offset(y, oy[0], oy[1], oy[2] + i, oy[3] + j), ld_f32(xs, elem_offset(xs, x[0], x[1], x[2] + i, x[3] + j)));
    }
  }
};
using Cat = Simt<CatBody>;

}  // namespace mk
