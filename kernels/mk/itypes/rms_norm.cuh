// RMSNorm(eps) over the last dim (seed §12, docs/itypes.md). One instruction = `rows` rows of C
// elements in up to kXPages pages (lids 0..2), each row padded to 128 B, loaded and stored row by row
// with 1-D bulk copies (generic copies when a row is not 16-byte aligned); the weight row lands in
// lid 3 the same way (L2-resident, so the extra copy costs no HBM traffic). Warp w normalises rows
// w, w+8, ... in fp32 in place. The host sizes `rows` (src/itypes/rms_norm.cpp, profile.rms_norm_pages).
// [Note: page release order] three unused lids first, then the weight (lid 3; the storer frees it once
// the rows are computed), then the rest of the unused lids, the row pages last, lid 0 first (each freed
// once its rows' stores have read it). The next instruction's rows land in pages that were free already;
// with np row pages per instruction the row pages rotate through 7 - 1 = 6 pages, so instruction i's
// loads wait for the stores of instruction i - 6 / np (np = 3: i - 2; np = 2: i - 3), and the weight
// stays in one page. [Note: page-wise rows] row lid k of instruction i is row lid k of i - 6 / np, and
// both ends go page by page in lid order: the storer frees lid 0 as soon as its rows are read, and the
// loader issues lid 0's rows as soon as it has that page, before it waits for lid 1.
// Page phases: [Note: page phases] in elementwise.cuh.
#pragma once
#include "mk/half.cuh"
#include "mk/itypes/elementwise.cuh"

#ifndef MK_RMS_TWO_LOADERS  // RMSNorm's odd iterations loaded by the spare warp ([Note: two loaders])
#define MK_RMS_TWO_LOADERS 1
#endif
#ifndef MK_RMS_SPREAD  // 0: warp-per-row only (A/B switch for [Note: rms spread])
#define MK_RMS_SPREAD 1
#endif

namespace mk {

// P: struct { static constexpr float eps; static constexpr bool has_weight; static constexpr bool f16; }
template <class P>
struct RMSNorm {
  using H = Half<P::f16>;  // x, y and the weight: fp16 (P::f16) or bf16 (mk/half.cuh)
  // rows loaded (bytes + the 32 loader lanes), computed (every consumer lane), weight loaded (bytes + the
  // 32 loader lanes): the weight has its own semaphore so that an abort while the loader waits for the
  // weight's page leaves only complete phases to drain. Every lane that wrote shared memory arrives
  // itself (generic row copies, in-place normalisation): [Note: one stage writer] in interpreter.cuh.
  static constexpr int kRowsLoaded = 0, kComputed = 1, kWeightLoaded = 2;
  static constexpr int num_semaphores = 3;
  static __device__ int semaphore_count(int i) { return i == kComputed ? kConsumerWarps * 32 : 32; }
  static constexpr int kXPages = 3, kWeightLid = kXPages, kUsedPages = kXPages + 1;
  // [Note: two loaders] (mk/vm.cuh): instruction i + 2's loader issues its first row page while i + 1's
  // passes i's later row pages on ([Note: page-wise rows]); safe with the early hand-back only because the
  // page waits count ([Note: page counts] in mk/vm.cuh).
  static constexpr bool kTwoLoaders = MK_RMS_TWO_LOADERS;
  static __device__ int row_bytes(int C) { return (2 * C + 127) / 128 * 128; }
  // Row pages the instruction uses (index words 12 rows, 13 C): lids [0, np); lids [np, 3) are unused.
  static __device__ int row_pages(const i32* idx) {
    const int per_page = kPageBytes / row_bytes(idx[13]);
    return max(1, min(kXPages, (idx[12] + per_page - 1) / per_page));
  }
  static __device__ int lid_release_order(int q, const i32* inst) {
    const int np = row_pages(inst + kWIndices);
    // The unused lids in order: [np, 3) then [4, 7); u-th of them.
    const auto unused = [np](int u) { return u < kXPages - np ? np + u : u - (kXPages - np) + kUsedPages; };
    const int nu = kNumPages - 1 - np;  // unused lids (>= 3)
    if (q < 3) return unused(q);
    if (q == 3) return kWeightLid;
    if (q < nu + 1) return unused(q - 1);
    return q - (nu + 1);  // the row pages, lid 0 first ([Note: page-wise rows])
  }
  // Loader: wait for and pass on at once the unused lids.
  static __device__ bool release_unused_lids(Ctx& c, int np) {
    return release_unused(c, np, kXPages) && release_unused(c, kUsedPages);
  }

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

  // Loader: row pages first (free at once, release order), row copies, then the weight's page (the
  // previous instruction's, free once its rows are computed), the weight copy, and the unused lids last
  // (as Elementwise::load). Without a weight, its page is unused: passed on right after the wait.
  static __device__ void load(Ctx& c) {
    const int np = row_pages(c.idx());
#ifdef MK_SAFE_ORDER
    if (!release_unused_lids(c, np)) return;
#endif
    if (!wait_inputs(c)) return;
    const i32* idx = c.idx();
    const int b = idx[0], d = idx[1], r0 = idx[2], col0 = idx[3], C = idx[13];
    int rows = idx[12];
    const Rows rw(c, C);
    const SlotDesc& x = c.slot(c.src_slot(0));
    const typename H::T* xp = reinterpret_cast<const typename H::T*>(x.ptr) + elem_offset(x, b, d, r0, col0);
#ifndef MK_EXP_RMS_NO_LOAD
    const bool xbulk = bulk_ok(x, col0, C);
#else  // experiment (benchmarks/notes.md Session 9): time the pipeline without the row loads
    const bool xbulk = false;
    rows = 0;
#endif
    // [Note: page-wise rows] page by page: wait for the page, announce its bulk bytes (no arrive), copy
    // its rows; every lane arrives after all its copies, so the phase cannot complete before they are
    // done. An abort after the first page arrives and drains what was issued.
    bool ok = true;
    for (int lid = 0; lid < np; ++lid) {
      ok = c.lane != 0 || page_wait_lane(c, lid);
      if (!warp_ok(c, ok)) {
        if (lid == 0) return;
        arrive(c.sem(kRowsLoaded));
        if (c.lane == 0) drain_loads(c.sem(kRowsLoaded));
        return;
      }
      const int ra = lid * rw.per_page, rb = min(rows, ra + rw.per_page);
      if (xbulk) {
        if (c.lane == 0 && rb > ra)
          cuda::ptx::mbarrier_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                        c.sem(kRowsLoaded), static_cast<u32>((rb - ra) * 2 * C));
        __syncwarp();
        for (int r = ra + c.lane; r < rb; r += 32)
          cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, rw.at(r),
                                   xp + static_cast<long long>(r) * x.dims[3],
                                   static_cast<u32>(2 * C), c.sem(kRowsLoaded));
      } else {
        for (int r = ra; r < rb; ++r) {
          typename H::T* dr = reinterpret_cast<typename H::T*>(rw.at(r));
          for (int e = c.lane; e < C; e += 32) dr[e] = xp[static_cast<long long>(r) * x.dims[3] + e];
        }
      }
    }
    arrive(c.sem(kRowsLoaded));
    ok = c.lane != 0 || page_wait_lane(c, kWeightLid);
    if (!warp_ok(c, ok)) {
      if (c.lane == 0) drain_loads(c.sem(kRowsLoaded));
      return;
    }
    if constexpr (P::has_weight) {
      const SlotDesc& ws = c.slot(c.src_slot(1));
      const typename H::T* wp =
          reinterpret_cast<const typename H::T*>(ws.ptr) + elem_offset(ws, idx[8], idx[9], idx[10], idx[11]);
      const bool wbulk = (C % 8) == 0 && (reinterpret_cast<unsigned long long>(wp) % 16) == 0;
      typename H::T* wd = reinterpret_cast<typename H::T*>(c.page(kWeightLid));
      // [Note: resident weight] the previous instruction of this CTA (iteration - 1) loaded the same weight
      // row into the same page, and the page passed straight from it to this one (release order position
      // 3 -> lid 3; nothing else can hold it in between), so the row is still there: no copy. Its load
      // completed before that instruction's consumers finished, which the page wait above follows; so did
      // its loader's note in Shared (the other loader warp's, under kTwoLoaders), read by lane 0 after that
      // wait and passed on by a shuffle.
      const unsigned long long key = reinterpret_cast<unsigned long long>(wp);
      const int pid = c.st->pid[kWeightLid];
      bool kept = false;
      if (c.lane == 0) {
        Shared& sh = *c.sh;
        kept = sh.kept_iter == c.iter - 1 && sh.kept_ptr == key && sh.kept_c == C && sh.kept_pid == pid;
        sh.kept_ptr = key, sh.kept_c = C, sh.kept_pid = pid, sh.kept_iter = c.iter;
      }
      kept = __shfl_sync(0xffffffffu, kept, 0);
      if (kept) {  // nothing to copy
      } else if (wbulk) {
        if (c.lane == 0) {
          cuda::ptx::mbarrier_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                        c.sem(kWeightLoaded), static_cast<u32>(2 * C));
          cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, wd, wp,
                                   static_cast<u32>(2 * C), c.sem(kWeightLoaded));
        }
        __syncwarp();  // the expect_tx precedes the other lanes' arrivals
      } else {
        for (int e = c.lane; e < C; e += 32) wd[e] = wp[e];
      }
      arrive(c.sem(kWeightLoaded));
    } else if (c.lane == 0) {
      page_finish(c, kWeightLid);
    }
#ifndef MK_SAFE_ORDER
    if (!release_unused_lids(c, np) && c.lane == 0) {
      drain_loads(c.sem(kRowsLoaded));
      if constexpr (P::has_weight) drain_loads(c.sem(kWeightLoaded));
    }
#endif
  }

  // [Note: rms spread] Warp w normalising rows w, w + 8, ... leaves warps idle when an instruction has
  // fewer than 8 rows (C = 16384: 3 rows): the instruction's compute, hence its pages' residency, is one
  // warp's pass over a whole 32 KB row. With at most kSpreadRows rows, every row is spread over all 256
  // consumer threads instead: each warp writes its partial sum of squares of row r to the stage scratch
  // ([Note: stage scratch], after the 3 semaphores), one named barrier, then every thread adds the row's
  // 8 partials and scales its part. Every consumer thread reaches the barrier, also after an abort, so
  // no warp is left waiting there. Measured (H200, % of copy, per_sm / global): 16384^2 77 / 80 ->
  // 83 / 89 (3 rows); at 16384 x 8192 (6 rows) spreading was slower than warp-per-row (75 vs 83 global,
  // the barrier costs more than the 2 idle warps), hence the limit of 4 rows.
  static constexpr int kScratchSem = 4;
  static constexpr int kSpreadRows = kConsumerWarps / 2;  // half the warps or more idle under warp-per-row
  static_assert(kSpreadRows * kConsumerWarps <= (kMaxSemaphores - kScratchSem) * 2, "the partials fit the scratch");
  static_assert(num_semaphores <= kScratchSem, "the scratch starts past the semaphores");

  // Sum of squares of the 16-byte vectors j0, j0 + step, ... < V of a row (C % 8 == 0).
  static __device__ __forceinline__ float sum_sq(const uint4* row, int j0, int V, int step) {
    float ss = 0.f;
#pragma unroll 4
    for (int j = j0; j < V; j += step) {
      const uint4 v = row[j];
      const typename H::T2* h = reinterpret_cast<const typename H::T2*>(&v);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = H::unpack2(h[k]);
        ss += f.x * f.x + f.y * f.y;
      }
    }
    return ss;
  }
  // row[j] = half(row[j] * inv * w[j]) over the same vectors, rounded once.
  static __device__ __forceinline__ void scale(uint4* row, const uint4* w, int j0, int V, int step, float inv) {
#pragma unroll 4
    for (int j = j0; j < V; j += step) {
      uint4 v = row[j];
      typename H::T2* h = reinterpret_cast<typename H::T2*>(&v);
      uint4 wv;
      if constexpr (P::has_weight) wv = w[j];
      const typename H::T2* wh = reinterpret_cast<const typename H::T2*>(&wv);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = H::unpack2(h[k]);
        float2 g = make_float2(1.f, 1.f);
        if constexpr (P::has_weight) g = H::unpack2(wh[k]);
        h[k] = H::pack2(f.x * inv * g.x, f.y * inv * g.y);
      }
      row[j] = v;
    }
  }
  static __device__ __forceinline__ float inv_rms(float ss, int C) {
    return rsqrtf(ss / static_cast<float>(C) + P::eps);
  }
  static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
  }

  static __device__ void compute(Ctx& c) {
    const i32* idx = c.idx();
    const int rows = idx[12], C = idx[13];
    const bool vec = (C % 8) == 0;
    bool ok = wait(c, c.sem(kRowsLoaded), 0);
    if constexpr (P::has_weight) ok = ok && wait(c, c.sem(kWeightLoaded), 0);
    const Rows rw(c, C);
    const typename H::T* w = reinterpret_cast<const typename H::T*>(c.page(kWeightLid));
    const uint4* w4 = reinterpret_cast<const uint4*>(w);
    if (MK_RMS_SPREAD && vec && rows <= kSpreadRows) {  // [Note: rms spread]
      const int tid = c.warp * 32 + c.lane, V = C / 8;
      float* part = c.scratch(kScratchSem);
      if (ok)
        for (int r = 0; r < rows; ++r) {
          const float ss = warp_sum(sum_sq(reinterpret_cast<const uint4*>(rw.at(r)), tid, V, kSimtThreads));
          if (c.lane == 0) part[r * kConsumerWarps + c.warp] = ss;
        }
      ptx::named_sync<kConsumerBarrier>(kSimtThreads);
      if (!ok) return;
      for (int r = 0; r < rows; ++r) {
        const float4 a = reinterpret_cast<const float4*>(part)[2 * r], b = reinterpret_cast<const float4*>(part)[2 * r + 1];
        const float ss = ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w));
        scale(reinterpret_cast<uint4*>(rw.at(r)), w4, tid, V, kSimtThreads, inv_rms(ss, C));
      }
    } else {
      if (!ok) return;
      for (int r = c.warp; r < rows; r += kConsumerWarps) {
        typename H::T* row = reinterpret_cast<typename H::T*>(rw.at(r));
        if (vec) {
          uint4* row4 = reinterpret_cast<uint4*>(row);
          scale(row4, w4, c.lane, C / 8, 32, inv_rms(warp_sum(sum_sq(row4, c.lane, C / 8, 32)), C));
          continue;
        }
        float ss = 0.f;
        for (int e = c.lane; e < C; e += 32) {
          const float f = H::to_float(row[e]);
          ss += f * f;
        }
        const float inv = inv_rms(warp_sum(ss), C);
        for (int e = c.lane; e < C; e += 32) {
          const float g = P::has_weight ? H::to_float(w[e]) : 1.f;
          row[e] = H::from_float(H::to_float(row[e]) * inv * g);
        }
      }
    }
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the bulk store reads this page
    arrive(c.sem(kComputed));
  }

  // Finishes the weight's page (has_weight; read by the consumers only, who waited for its load) once
  // the rows are computed, the row pages once their stores have read them.
  static __device__ void store(Ctx& c) {
    if (!wait_reuse(c)) return drain_stores();
    if (!wait(c, c.sem(kComputed), 0)) return drain_stores();
#ifndef MK_SAFE_PAGES
    if (P::has_weight && c.lane == 0) page_finish(c, kWeightLid);
#endif
    // The instruction words, once: row loops below use registers only.
    const i32* idx = c.idx();
    const int b = idx[4], d = idx[5], r0 = idx[6], col0 = idx[7], rows = idx[12], C = idx[13];
    const Rows rw(c, C);
    const SlotDesc& y = c.slot(c.dst_slot(0));
    typename H::T* dst = reinterpret_cast<typename H::T*>(y.ptr) + elem_offset(y, b, d, r0, col0);
    const long long stride = y.dims[3];
    // The pages to finish, read while the stage is ours: row lids [0, np) (and the weight's under
    // MK_SAFE_PAGES), 4 bits each.
    const int np = row_pages(idx);
    u32 finish = 0;
    int nfinish = 0;
    for (int lid = 0; lid < np; ++lid) finish |= static_cast<u32>(c.st->pid[lid]) << (4 * nfinish++);
#ifdef MK_SAFE_PAGES
    if (P::has_weight) finish |= static_cast<u32>(c.st->pid[kWeightLid]) << (4 * nfinish++);
#endif
    const auto finish_page = [&](int k) { finish_pid(c.sh, static_cast<int>((finish >> (4 * k)) & 15u), c.iter); };
#ifndef MK_EXP_RMS_NO_STORE
    if (bulk_ok(y, col0, C)) {
#else  // experiment (benchmarks/notes.md Session 9): time the pipeline without the row stores
    if (true) {
#endif
      for (int r = c.lane; r < rows; r += 32)
#ifndef MK_EXP_RMS_NO_STORE
        cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, dst + r * stride, rw.at(r),
                                 static_cast<u32>(2 * C));
#else
        (void)dst;
#endif
      cuda::ptx::cp_async_bulk_commit_group();
      // [Note: early hand-back] the stage goes back before the stores have read the rows: the controller
      // publishes instruction i + 2 now, whose loads need no page of this one unless the row pages
      // rotate two-deep (np = 3); the row pages are finished from registers once read. A page's finishes
      // stay in order: the next owner waits for this finish before it can finish the page itself.
      const DstBarriers b = hand_back(c);
      // [Note: page-wise rows] row page k is finished once every lane with a row in it has seen its
      // stores read: a lane waits (for all its rows) at the page of its first row, lane, and owns no row
      // of an earlier page.
      for (int k = 0; k < np; ++k) {
        if (c.lane < rows && c.lane / rw.per_page == k) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
        __syncwarp();
        if (c.lane == 0) finish_page(k);
      }
      if (c.lane == 0)
        for (int k = np; k < nfinish; ++k) finish_page(k);
      release_dst(c, b);
      return;
    }
    for (int r = 0; r < rows; ++r) {
      const typename H::T* src = reinterpret_cast<const typename H::T*>(rw.at(r));
      for (int e = c.lane; e < C; e += 32) dst[r * stride + e] = src[e];
    }
    __threadfence();
    __syncwarp();
    if (c.lane == 0)
      for (int k = 0; k < nfinish; ++k) finish_page(k);
    store_done(c);
  }
};

}  // namespace mk
