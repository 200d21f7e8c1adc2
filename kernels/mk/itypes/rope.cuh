// Rope(bcast[, x_bshd][, interleaved]) (docs/itypes.md): y = x * cos + rot(x) * sin over an nd x rows x D
// box, fp32, rounded once; rot = rotate_half (column c takes -x[c + D/2] / x[c - D/2]) or, interleaved,
// rotate_every_two (column c takes -x[c + 1] for even c, x[c - 1] for odd c: on the 8-element path the
// partner lies in the same chunk, the scalar path loads it). Plain loads and stores ([Note: SIMT bodies]).
#pragma once
#include "mk/simt.cuh"

#ifndef MK_ROPE_CHUNKS
#define MK_ROPE_CHUNKS 4  // 16-byte chunks in flight per thread ([Note: SIMT chunks])
#endif

namespace mk {

// P: struct { static constexpr unsigned bcast; static constexpr bool x_bshd, interleaved, half_tables; }
// half_tables: cos / sin hold one column per pair (column c reads c / 2); scalar path only.
template <class P>
struct RopeBody {
  // Row (j, r) of x, cos, sin and y starts at view.at(r, 0) + j * its dim-1 stride (xj, cj, sj, yj).
  struct Views {
    TileView x, cs, sn, y;
    long long xj, cj, sj, yj;
  };
  template <int V>
  static __device__ void run_v(const Views& v, int nd, int rows, int D, int tid) {
    struct Loaded { Raw<V> x, rot, c, s; };
    const int cpr = D / V, h = D / 2;
    // Chunk e: columns [col, col + V) of row r of head j; the rotated half lies h columns away.
    auto at = [&](int e, int& col, long long& xo, long long& co, long long& so, long long& yo) {
      col = (e % cpr) * V;
      const int jr = e / cpr, r = jr % rows, j = jr / rows;
      xo = v.x.at(r, col) + j * v.xj;
      const int tc = P::half_tables ? col >> 1 : col;
      co = v.cs.at(r, tc) + j * v.cj;
      so = v.sn.at(r, tc) + j * v.sj;
      yo = v.y.at(r, col) + j * v.yj;
    };
    chunked<V == 8 ? MK_ROPE_CHUNKS : 1>(tid, nd * rows * cpr, kSimtThreads,
        [&](int e) {
          int col;
          long long xo, co, so, yo;
          at(e, col, xo, co, so, yo);
          // Interleaved: V = 1 loads the partner column col ^ 1 of the same row; V = 8 has it in x's chunk.
          const long long ro = P::interleaved ? (V == 1 ? v.x.at(e / cpr % rows, col ^ 1) + (e / cpr / rows) * v.xj : xo)
                                              : (col < h ? xo + h : xo - h);
          return Loaded{ld_raw<V>(v.x, xo), ld_raw<V>(v.x, ro), ld_raw<V>(v.cs, co), ld_raw<V>(v.sn, so)};
        },
        [&](int e, const Loaded& l) {
          int col;
          long long xo, co, so, yo;
          at(e, col, xo, co, so, yo);
          float xv[V], rv[V], cv[V], sv[V], out[V];
          to_f32<V>(v.x.dt, l.x, xv);
          to_f32<V>(v.x.dt, l.rot, rv);
          to_f32<V>(v.cs.dt, l.c, cv);
          to_f32<V>(v.sn.dt, l.s, sv);
          if constexpr (P::interleaved) {
#pragma unroll
            for (int q = 0; q < V; ++q) {  // V = 8: the partner is element q ^ 1 of this chunk (col is even)
              const bool even = ((col + q) & 1) == 0;
              const float partner = V == 1 ? rv[0] : xv[q ^ 1];
              out[q] = xv[q] * cv[q] + (even ? -partner : partner) * sv[q];
            }
          } else {
            const float sign = col < h ? -1.f : 1.f;
#pragma unroll
            for (int q = 0; q < V; ++q) out[q] = xv[q] * cv[q] + sign * rv[q] * sv[q];
          }
          st_vec<V>(v.y, yo, out);
        });
  }
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    const int nd = idx[12], rows = idx[13], D = idx[14];
    const SlotDesc &xs = c.slot(c.src_slot(0)), &css = c.slot(c.src_slot(1)), &sns = c.slot(c.src_slot(2));
    const SlotDesc& ys = c.slot(c.dst_slot(0));
    // x_bshd: rows run along backing dim 1 (nd is 1); cos / sin broadcast along j (bit 2) or r (bit 4).
    constexpr int cr = (P::bcast & 4u) ? -1 : 2;
    const Views v{tile_view(xs, idx, P::x_bshd ? 1 : 2, 3), tile_view(css, idx + 8, cr, 3), tile_view(sns, idx + 8, cr, 3),
                  tile_view(ys, idx + 4, 2, 3), dim_stride(xs, 1), (P::bcast & 2u) ? 0 : dim_stride(css, 1),
                  (P::bcast & 2u) ? 0 : dim_stride(sns, 1), dim_stride(ys, 1)};
    const bool vec = D % 16 == 0 && vec8_ok(v.x) && vec8_ok(v.cs) && vec8_ok(v.sn) && vec8_ok(v.y) && v.x.cs == 1 &&
                     v.cs.cs == 1 && v.sn.cs == 1 && v.y.cs == 1 && v.xj % 8 == 0 && v.cj % 8 == 0 && v.sj % 8 == 0 &&
                     v.yj % 8 == 0;
    if constexpr (P::half_tables) run_v<1>(v, nd, rows, D, tid);
    else if (vec) run_v<8>(v, nd, rows, D, tid);
    else run_v<1>(v, nd, rows, D, tid);
  }
};
template <class P>
using Rope = Simt<RopeBody<P>>;

}  // namespace mk
