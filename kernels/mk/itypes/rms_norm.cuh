// RMSNorm(eps) over the last dim (seed §12, docs/itypes.md). One instruction = `rows` rows of C
// elements in up to kXPages pages (lids 0..2), each row padded to 128 B, loaded and stored row by row
// with 1-D bulk copies (generic copies when a row is not 16-byte aligned); the weight row lands in
// lid 3 the same way (L2-resident, so the extra copy costs no HBM traffic). Rows are normalised in fp32
// in place by the 8 consumer warps (compute()). The host sizes `rows` (src/itypes/rms_norm.cpp, profile.rms_norm_pages).
// Pages are pipelined one by one, as Elementwise's tiles: page p has its own loaded and computed
// semaphores, is computed as soon as it lands, stored as soon as it is computed, and freed once its
// store has read it. [Note: page release order] the three unused lids first, then the weight (lid 3;
// the storer frees it once the last page is computed), then the row pages in order. So the next
// instruction's row pages are free at once, and the one after it gets this one's pages as they drain.
// Page phases: [Note: page phases] in elementwise.cuh.
#pragma once
#include "mk/itypes/elementwise.cuh"

namespace mk {

// P: struct { static constexpr float eps; static constexpr bool has_weight; }
template <class P>
struct RMSNorm {
  // loaded[p] (bytes), computed[p] (8 consumer warps) per row page, weight loaded (bytes): the weight
  // has its own semaphore so that an abort while the loader waits for the weight's page leaves only
  // complete phases to drain.
  static constexpr int kXPages = 3, kWeightLid = kXPages, kUsedPages = kXPages + 1;
  static constexpr int kLoaded = 0, kComputed = kXPages, kWeightLoaded = 2 * kXPages;
  static constexpr int num_semaphores = 2 * kXPages + 1;
  static __device__ int semaphore_count(int i) { return i >= kComputed && i < kWeightLoaded ? kConsumerWarps : 1; }
  static __device__ int lid_release_order(int q, const i32*) {
    const int unused = kNumPages - kUsedPages;
    if (q < unused) return q + kUsedPages;
    return q == unused ? kWeightLid : q - unused - 1;
  }

  static __device__ int row_bytes(int C) { return (2 * C + 127) / 128 * 128; }
  // Row r of the instruction: page r / per_page, at (r % per_page) * rb. The page addresses are read
  // from the stage once per role.
  struct Rows {
    unsigned char* p0;
    unsigned char* p1;
    unsigned char* p2;
    int rb, per_page;
    __device__ Rows(const Ctx& c, int C)
        : p0(c.page(0)), p1(c.page(1)), p2(c.page(2)), rb(row_bytes(C)), per_page(kPageBytes / row_bytes(C)) {}
    __device__ unsigned char* at(int r) const {
      const int q = r / per_page;
      return (q == 0 ? p0 : q == 1 ? p1 : p2) + (r - q * per_page) * rb;
    }
  };
  static_assert(kXPages == 3, "Rows holds three page addresses");
  // Rows can move by 1-D bulk copy: 16-byte aligned start and length.
  static __device__ bool bulk_ok(const SlotDesc& s, int col0, int C) {
    return (C % 8) == 0 && (s.dims[3] % 8) == 0 && (col0 % 8) == 0 && (s.ptr % 16) == 0;
  }

  // Pages holding rows of this instruction (the last may be partly used).
  static __device__ int num_pages(int rows, int per_page) { return (rows + per_page - 1) / per_page; }

  // Loader: each row page in order (waited, then its row copies, on its own semaphore), then the
  // weight's page (the previous instruction's, free once its rows are computed), the weight copy, and
  // the unused lids last (as Elementwise::load). A row page without rows is passed on right after its
  // wait; without a weight, its page likewise.
  static __device__ void load(Ctx& c) {
#ifdef MK_SAFE_ORDER
    if (!release_unused(c, kUsedPages)) return;
#endif
    if (!wait_inputs(c)) return;
    const i32* idx = c.idx();
    const int rows = idx[12], C = idx[13], rb = row_bytes(C), per_page = kPageBytes / rb;
    const int np = num_pages(rows, per_page);
    int issued = 0;  // pages whose loaded phase has its copies in flight
    for (int p = 0; p < kXPages; ++p) {
      bool ok = c.lane != 0 || page_wait_lane(c, p);
      if (!warp_ok(c, ok)) break;
      if (p >= np) {
        if (c.lane == 0) page_finish(c, p);
        continue;
      }
      // Few values live across the page waits (a Llama kernel's loader spilled): the row pointers are
      // derived here, per page.
      const int lo = p * per_page, hi = min(rows, lo + per_page);
      const SlotDesc& x = c.slot(c.src_slot(0));
      const __nv_bfloat16* xp =
          reinterpret_cast<const __nv_bfloat16*>(x.ptr) + elem_offset(x, idx[0], idx[1], idx[2] + lo, idx[3]);
      const bool xbulk = bulk_ok(x, idx[3], C);
      unsigned char* dst = c.page(p);
      // Announce the bulk bytes (no arrive), copy, then a single arrive after the generic copies (if
      // any) so the phase cannot complete before they are done.
      if (c.lane == 0 && xbulk)
        cuda::ptx::mbarrier_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                      c.sem(kLoaded + p), static_cast<u32>((hi - lo) * 2 * C));
      __syncwarp();
      if (xbulk) {
        for (int r = c.lane; r < hi - lo; r += 32)
          cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst + r * rb,
                                   xp + static_cast<long long>(r) * x.dims[3], static_cast<u32>(2 * C),
                                   c.sem(kLoaded + p));
      } else {
        for (int r = 0; r < hi - lo; ++r) {
          __nv_bfloat16* dr = reinterpret_cast<__nv_bfloat16*>(dst + r * rb);
          for (int e = c.lane; e < C; e += 32) dr[e] = xp[static_cast<long long>(r) * x.dims[3] + e];
        }
      }
      __syncwarp();
      if (c.lane == 0) arrive(c.sem(kLoaded + p));
      issued = p + 1;
    }
    auto drain_rows = [&] {
      if (c.lane == 0)
        for (int p = 0; p < issued; ++p) drain_loads(c.sem(kLoaded + p));
    };
    if (c.aborted) return drain_rows();
    const bool ok = c.lane != 0 || page_wait_lane(c, kWeightLid);
    if (!warp_ok(c, ok)) return drain_rows();
    if constexpr (P::has_weight) {
      const SlotDesc& ws = c.slot(c.src_slot(1));
      const __nv_bfloat16* wp =
          reinterpret_cast<const __nv_bfloat16*>(ws.ptr) + elem_offset(ws, idx[8], idx[9], idx[10], idx[11]);
      const bool wbulk = (C % 8) == 0 && (reinterpret_cast<unsigned long long>(wp) % 16) == 0;
      __nv_bfloat16* wd = reinterpret_cast<__nv_bfloat16*>(c.page(kWeightLid));
      if (c.lane == 0 && wbulk)
        (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                   cuda::ptx::space_shared, c.sem(kWeightLoaded),
                                                   static_cast<u32>(2 * C));
      if (wbulk) {
        if (c.lane == 0)
          cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, wd, wp,
                                   static_cast<u32>(2 * C), c.sem(kWeightLoaded));
      } else {
        for (int e = c.lane; e < C; e += 32) wd[e] = wp[e];
        __syncwarp();
        if (c.lane == 0) arrive(c.sem(kWeightLoaded));
      }
    } else if (c.lane == 0) {
      page_finish(c, kWeightLid);
    }
#ifndef MK_SAFE_ORDER
    if (!release_unused(c, kUsedPages)) {
      drain_rows();
      if constexpr (P::has_weight)
        if (c.lane == 0) drain_loads(c.sem(kWeightLoaded));
    }
#endif
  }

  // Page by page: every consumer warp arrives on computed[p] once its part of page p is done (none when
  // it has none). A page of at least 8 rows gives each warp whole rows (row r: warp r % 8); a page of
  // n < 8 rows (C > 2048) splits each row over 8 / n warps, which add their partial sums of squares
  // through the stage's scratch and one named barrier per page (every consumer warp reaches it, also
  // after an abort, so none is left waiting there).
  static constexpr int kRowBarrier = 2;  // named barrier id (0: __syncthreads, 1: kSimtBarrier)
  static __device__ void compute(Ctx& c) {
    const i32* idx = c.idx();
    const int rows = idx[12], C = idx[13];
    const Rows rw(c, C);
    const int np = num_pages(rows, rw.per_page);
    const __nv_bfloat16* w = reinterpret_cast<const __nv_bfloat16*>(c.page(kWeightLid));
    const bool vec = (C % 8) == 0;
    const int units = vec ? C / 8 : C;  // what a lane steps over: 8-element vectors, or elements
    float* part = c.sh->scratch[c.iter & 1];
    bool ok = true;
    for (int p = 0; p < np; ++p) {
      ok = ok && wait(c, c.sem(kLoaded + p), 0);
      if constexpr (P::has_weight)
        if (p == 0) ok = ok && wait(c, c.sem(kWeightLoaded), 0);
      const int lo = p * rw.per_page, n = min(rows, lo + rw.per_page) - lo;
      if (n >= kConsumerWarps) {
        for (int r = lo + (c.warp - lo % kConsumerWarps + kConsumerWarps) % kConsumerWarps; ok && r < lo + n;
             r += kConsumerWarps) {
          __nv_bfloat16* row = reinterpret_cast<__nv_bfloat16*>(rw.at(r));
          scale(row, w, 0, units, vec, c.lane, rsqrtf(sum_sq(row, 0, units, vec, c.lane) / C + P::eps));
        }
      } else {
        const int wpr = kConsumerWarps / n, first = c.warp - c.warp % wpr;  // warps per row, the row's first
        const bool mine = c.warp < wpr * n;
        const int k = c.warp % wpr, a = k * units / wpr, b = (k + 1) * units / wpr;
        __nv_bfloat16* row = reinterpret_cast<__nv_bfloat16*>(rw.at(lo + min(c.warp / wpr, n - 1)));
        const float ss = ok && mine ? sum_sq(row, a, b, vec, c.lane) : 0.f;
        if (c.lane == 0) part[p * kConsumerWarps + c.warp] = ss;
        ptx::named_sync<kRowBarrier>(kConsumerWarps * 32);
        if (ok && mine) {
          float total = 0.f;  // the same order in every warp of the row
          for (int q = 0; q < wpr; ++q) total += part[p * kConsumerWarps + first + q];
          scale(row, w, a, b, vec, c.lane, rsqrtf(total / C + P::eps));
        }
      }
      if (ok) {
        cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the bulk store reads this page
        __syncwarp();
        if (c.lane == 0) arrive(c.sem(kComputed + p));
      }
    }
  }

  // Sum of squares over units [a, b) of a row (8-element vectors when vec, else elements), warp-reduced.
  static __device__ __forceinline__ float sum_sq(const __nv_bfloat16* row, int a, int b, bool vec, int lane) {
    float ss = 0.f;
    if (vec) {
#pragma unroll 4
      for (int j = a + lane; j < b; j += 32) {
        const uint4 v = reinterpret_cast<const uint4*>(row)[j];
        const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float2 f = __bfloat1622float2(h[k]);
          ss += f.x * f.x + f.y * f.y;
        }
      }
    } else {
      for (int e = a + lane; e < b; e += 32) {
        const float f = __bfloat162float(row[e]);
        ss += f * f;
      }
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, m);
    return ss;
  }

  // Units [a, b) of a row in place: x * inv (* weight).
  static __device__ __forceinline__ void scale(__nv_bfloat16* row, const __nv_bfloat16* w, int a, int b, bool vec,
                                               int lane, float inv) {
    if (vec) {
#pragma unroll 4
      for (int j = a + lane; j < b; j += 32) {
        uint4 v = reinterpret_cast<const uint4*>(row)[j];
        __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
        uint4 wv;
        if constexpr (P::has_weight) wv = reinterpret_cast<const uint4*>(w)[j];
        const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&wv);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          float2 f = __bfloat1622float2(h[k]);
          float2 g = make_float2(1.f, 1.f);
          if constexpr (P::has_weight) g = __bfloat1622float2(wh[k]);
          h[k] = __floats2bfloat162_rn(f.x * inv * g.x, f.y * inv * g.y);
        }
        reinterpret_cast<uint4*>(row)[j] = v;
      }
    } else {
      for (int e = a + lane; e < b; e += 32) {
        const float g = P::has_weight ? __bfloat162float(w[e]) : 1.f;
        row[e] = __float2bfloat16_rn(__bfloat162float(row[e]) * inv * g);
      }
    }
  }

  // Stores each page once it is computed and frees it once its store has read it (the previous page's
  // while this one's copies are in flight); frees the weight's page (has_weight; read by the consumers
  // only, who waited for its load) once the last page is computed.
  static __device__ void store(Ctx& c) {
    if (!wait_reuse(c)) return drain_stores();
    // The instruction words, once: row loops below use registers only.
    const i32* idx = c.idx();
    const int b = idx[4], d = idx[5], r0 = idx[6], col0 = idx[7], rows = idx[12], C = idx[13];
    const Rows rw(c, C);
    const int np = num_pages(rows, rw.per_page);
    const SlotDesc& y = c.slot(c.dst_slot(0));
    __nv_bfloat16* dst = reinterpret_cast<__nv_bfloat16*>(y.ptr) + elem_offset(y, b, d, r0, col0);
    const long long stride = y.dims[3];
    const bool bulk = bulk_ok(y, col0, C);
    for (int p = 0; p < np; ++p) {
      if (!wait(c, c.sem(kComputed + p), 0)) return drain_stores();
#ifndef MK_SAFE_PAGES
      if (P::has_weight && p == np - 1 && c.lane == 0) page_finish(c, kWeightLid);
#endif
      const int lo = p * rw.per_page, hi = min(rows, lo + rw.per_page);
      if (bulk) {
        for (int r = lo + c.lane; r < hi; r += 32)
          cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, dst + r * stride, rw.at(r),
                                   static_cast<u32>(2 * C));
        cuda::ptx::cp_async_bulk_commit_group();
      } else {
        for (int r = lo; r < hi; ++r) {
          const __nv_bfloat16* src = reinterpret_cast<const __nv_bfloat16*>(rw.at(r));
          for (int e = c.lane; e < C; e += 32) dst[r * stride + e] = src[e];
        }
        __threadfence();
      }
#ifndef MK_SAFE_PAGES
      // Every lane's copies of the previous page have read it (this page's may still be in flight).
      if (p > 0) {
        cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});
        __syncwarp();
        if (c.lane == 0) page_finish(c, p - 1);
      }
#endif
    }
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    __syncwarp();
    if (c.lane == 0) {
#ifndef MK_SAFE_PAGES
      if (np > 0) page_finish(c, np - 1);
#else  // bisect switch: every page of the instruction freed here
      for (int p = 0; p < np; ++p) page_finish(c, p);
      if (P::has_weight) page_finish(c, kWeightLid);
#endif
    }
    store_done(c);
  }
};

}  // namespace mk
