// ElementwiseUnary / ElementwiseBinary (seed §12, docs/itypes.md). One instruction = up to 4 / inputs
// 128x128 bf16 tiles side by side (the host sizes it: src/itypes/elementwise.cpp ew_tiles). Input k's
// tile t lands in lid k * kMaxTiles + t by TMA (no swizzle: rows of 256 B); the consumers compute in
// fp32 in place in input 0's pages; the storer TMA-stores them tile by tile.
// [Note: page release order] unused lids first, then the other inputs' pages (the storer frees them
// as soon as their tile is computed), then input 0's (the output) in tile order, each freed once its
// store has read it. So the next instruction's first tiles load at once, its last ones as this
// instruction's stores drain.
#pragma once
#include "mk/simt.cuh"
#include "mk/unary.cuh"

namespace mk {

enum class Binary { add, sub, mul, div, maximum, minimum, select };

template <Unary... Us>
struct UnaryFn {
  static_assert(((!kUnaryHasK<Us>) && ...), "a scalar mk::Unary needs its constant: use ElementwiseUnaryK");
  static constexpr int inputs = 1;
  static constexpr __device__ unsigned bcast(int) { return 0; }
  static __device__ __forceinline__ float apply(const float (&v)[1]) {
    float x = v[0];
    ((x = unary<Us>(x)), ...);
    return x;
  }
};

// One step with its constant. S: struct { static constexpr Unary op; static constexpr float k; }
// (codegen emits one per step of an op list that has a scalar form, nested in the icode's P struct).
template <class... Ss>
struct UnaryStepsFn {
  static constexpr int inputs = 1;
  static constexpr __device__ unsigned bcast(int) { return 0; }
  static __device__ __forceinline__ float apply(const float (&v)[1]) {
    float x = v[0];
    ((x = unary<Ss::op>(x, Ss::k)), ...);
    return x;
  }
};

// The binary ops in fp32, as the host's binary_apply (src/itypes/elementwise.h).
template <Binary B>
__device__ __forceinline__ float binary(float a, float b, float alpha) {
  if constexpr (B == Binary::add) return a + alpha * b;
  else if constexpr (B == Binary::sub) return a - alpha * b;
  else if constexpr (B == Binary::mul) return a * b;
  else if constexpr (B == Binary::div) return __fdiv_rn(a, b);
  else if constexpr (B == Binary::maximum) return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
  else if constexpr (B == Binary::minimum) return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
  else return a != 0.f ? b : 0.f;  // select
}

// An fp32 value rounded to a 16-bit float and back (ElementwiseFused: a step's value rounded to its step
// dtype, [Note: fused rounding] in src/trace/fuse_elementwise.cpp); Round::f32 keeps it.
enum class Round { f32, bf16, f16 };
template <Round R>
__device__ __forceinline__ float round_to(float x) {
  if constexpr (R == Round::bf16) return __bfloat162float(__float2bfloat16_rn(x));
  else if constexpr (R == Round::f16) return __half2float(__float2half_rn(x));
  else return x;
}

// P: struct { static constexpr Binary op; static constexpr float alpha; static constexpr unsigned
// bcast_a, bcast_b; } (broadcast masks: bit k = padded dim k, docs/itypes.md).
template <class P>
struct BinaryFn {
  static constexpr int inputs = 2;
  static constexpr __device__ unsigned bcast(int k) { return k == 0 ? P::bcast_a : P::bcast_b; }
  static __device__ __forceinline__ float apply(const float (&v)[2]) { return binary<P::op>(v[0], v[1], P::alpha); }
};

// [Note: page phases] page_finished[p] is a count-1 mbarrier. The instruction of iteration i waits on
// parity i & 1 of each of its 7 pages, then arrives (page_finish) on each exactly once. The wait passes
// once phase i has completed, i.e. once the instruction before it on this CTA arrived; instruction i-2
// finished all its pages before instruction i was published (inst_finished), so the page is then at
// phase i (blocks) or i+1 (passes). Parity cannot tell phase i+2 from phase i: an arrive of instruction
// i that comes before its own wait pushes the page to i+2, and the wait then hangs (or a later one
// passes while the page is still in use). So every page_finish must be ordered after this
// instruction's wait on that page (same lane, or loader wait -> loads -> loaded sem -> consumers ->
// computed sem -> storer) and after every read and write of the page (TMA stores: wait_group_read).
// A waiter two phases early (a loader running ahead of the other loader warp while the instruction
// before the previous one still finishes pages after its hand-back) is held back by the page counts
// (mk/vm.cuh [Note: page counts]) before it tests the parity.

// Abort path of a loader, one lane: the loads it issued must not land in shared memory after the
// CTA exits (a sticky launch error). Waits for the phase they complete, without the abort check,
// at most 100 ms.
__device__ __forceinline__ void drain_loads(u64* bar) {
  const u64 start = ptx::globaltimer();
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, 0u))
    if (ptx::globaltimer() - start > 100000000ull) return;
}
// Abort path of a storer: the same for this lane's bulk stores (they read shared memory).
__device__ __forceinline__ void drain_stores() { cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{}); }

template <class F>
struct Elementwise {
  static constexpr int kIn = F::inputs;
  static constexpr int kTile = 128;
  // Up to kMaxTiles column-adjacent tiles per instruction (the host picks; profile.ew_max_pages = 4):
  // input k's tile t lands in lid k * kMaxTiles + t.
  static constexpr int kMaxTiles = 4 / kIn;
  static constexpr int kUsedPages = kMaxTiles * kIn;
  static_assert(kMaxTiles >= 1 && kUsedPages <= kNumPages, "elementwise pages");
  // Indices: origin of input k at 4k, output origin at 4*kIn, then rows, cols.
  static constexpr int kOut = 4 * kIn, kRows = 4 * kIn + 4, kCols = 4 * kIn + 5;
  // loaded[kMaxTiles] (TMA bytes), computed[kMaxTiles] (8 consumer warps)
  static constexpr int num_semaphores = 2 * kMaxTiles;

  static __device__ int semaphore_count(int i) { return i < kMaxTiles ? 1 : kConsumerWarps; }
  static __device__ __forceinline__ int lid(int k, int t) { return k * kMaxTiles + t; }

  static __device__ int lid_release_order(int q, const i32*) {
    const int unused = kNumPages - kUsedPages;
    if (q < unused) return kUsedPages + q;
    q -= unused;  // then inputs kIn-1 .. 0, kMaxTiles pages each in tile order
    return lid(kIn - 1 - q / kMaxTiles, q % kMaxTiles);
  }

  static __device__ int num_tiles(const Ctx& c) { return (c.idx()[kCols] + kTile - 1) / kTile; }

  // Each tile's pages are waited for right before its loads, and the unused lids are passed on only
  // after the loads are issued: the last of them are the previous instruction's data pages, still being
  // stored (timeline: waiting for them first serialised each instruction's loads behind the previous
  // stores). A tile is issued whole (all its pages waited first), so an abort leaves only complete
  // loaded phases to drain. Pages of tiles this instruction does not have (t >= nt) are passed on by
  // the loader right after its wait ([Note: page phases]: the storer would race that wait).
  static __device__ void load(Ctx& c) {
#ifdef MK_SAFE_ORDER
    if (!release_unused(c, kUsedPages)) return;
#endif
    if (!wait_inputs(c)) return;
    int issued = 0;  // lane 0: tiles whose loads are in flight
    bool ok = true;
    if (c.lane == 0) {
      const int nt = num_tiles(c);
      const i32* idx = c.idx();
      for (int t = 0; t < kMaxTiles && ok; ++t) {
        for (int k = 0; k < kIn && ok; ++k) ok = page_wait_lane(c, lid(k, t));
        if (!ok) break;
        if (t >= nt) {
          for (int k = 0; k < kIn; ++k) page_finish(c, lid(k, t));
          continue;
        }
#ifndef MK_EXP_EW_NO_LOAD
        (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                   cuda::ptx::space_shared, c.sem(t), kIn * kPageBytes);
        for (int k = 0; k < kIn; ++k) {
          const i32* o = idx + 4 * k;
          const i32 coords[4] = {o[3] + t * kTile, o[2], o[1], o[0]};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                          c.page(lid(k, t)), c.map(c.src_slot(k)), coords, c.sem(t));
        }
#else  // experiment (benchmarks/notes.md): time the pipeline without the loads
        arrive(c.sem(t));
#endif
        issued = t + 1;
      }
    }
    ok = warp_ok(c, ok);
#ifndef MK_SAFE_ORDER
    if (ok) ok = release_unused(c, kUsedPages);
#endif
    if (!ok && c.lane == 0)
      for (int t = 0; t < issued; ++t) drain_loads(c.sem(t));
  }

  static __device__ void compute(Ctx& c) {
    const int nt = num_tiles(c);
    const int tid = c.warp * 32 + c.lane;
    for (int t = 0; t < nt; ++t) {
      if (!wait(c, c.sem(t), 0)) return;
      uint4* out = reinterpret_cast<uint4*>(c.page(t));
#pragma unroll 4
      for (int i = 0; i < kPageBytes / 16 / (kConsumerWarps * 32); ++i) {
        const int v = i * kConsumerWarps * 32 + tid;
        uint4 in[kIn];
#pragma unroll
        for (int k = 0; k < kIn; ++k) in[k] = reinterpret_cast<const uint4*>(c.page(lid(k, t)))[v];
        uint4 res;
        const __nv_bfloat162* h[kIn];
#pragma unroll
        for (int k = 0; k < kIn; ++k) h[k] = reinterpret_cast<const __nv_bfloat162*>(&in[k]);
        __nv_bfloat162* r = reinterpret_cast<__nv_bfloat162*>(&res);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          float lo[kIn], hi[kIn];
#pragma unroll
          for (int k = 0; k < kIn; ++k) {
            const float2 f = __bfloat1622float2(h[k][j]);
            lo[k] = f.x;
            hi[k] = f.y;
          }
          r[j] = __floats2bfloat162_rn(F::apply(lo), F::apply(hi));
        }
        out[v] = res;
      }
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the TMA store reads this page
      __syncwarp();
      if (c.lane == 0) arrive(c.sem(kMaxTiles + t));
    }
  }

  // Finishes the pages of tiles t < nt (the loader finished the others): input k >= 1's once tile t is
  // computed, the output's (input 0's) once its store has read it.
  static __device__ void store(Ctx& c) {
    if (!wait_reuse(c)) return drain_stores();
    const i32* idx = c.idx();
    const int b = idx[kOut], d = idx[kOut + 1], r0 = idx[kOut + 2], col0 = idx[kOut + 3];
    const int rows = idx[kRows], cols = idx[kCols], nt = num_tiles(c);
    const int ys = c.dst_slot(0);
    const SlotDesc& y = c.slot(ys);
    for (int t = 0; t < nt; ++t) {
      if (!wait(c, c.sem(kMaxTiles + t), 0)) return drain_stores();
      // Computed: the other inputs' pages of this tile are free now (the result is in input 0's page).
#ifndef MK_SAFE_PAGES
      if (c.lane == 0)
        for (int k = 1; k < kIn; ++k) page_finish(c, lid(k, t));
#endif
      const int c0 = col0 + t * kTile, tc = min(kTile, cols - t * kTile);
      // TMA clips at the tensor's edge only; a tile that ends inside the tensor is stored by hand.
      const bool tma = (y.flags & 1) && (rows == kTile || r0 + rows == y.dims[2]) &&
                       (tc == kTile || c0 + tc == y.dims[3]);
#ifndef MK_EXP_EW_NO_STORE  // experiment: time the pipeline without the stores
      if (tma) {
        if (c.lane == 0) {
          const i32 coords[4] = {c0, r0, d, b};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, c.map(ys), coords,
                                          c.page(t));
          cuda::ptx::cp_async_bulk_commit_group();
        }
      } else {
        const __nv_bfloat16* src = reinterpret_cast<const __nv_bfloat16*>(c.page(t));
        __nv_bfloat16* dst = reinterpret_cast<__nv_bfloat16*>(y.ptr);
        for (int r = 0; r < rows; ++r)
          for (int e = c.lane; e < tc; e += 32) dst[elem_offset(y, b, d, r0 + r, c0 + e)] = src[r * kTile + e];
        __threadfence();
        __syncwarp();
      }
#else
      (void)b, (void)d;
#endif
      // The previous tile's store has read its page (the one in flight is this tile's, if TMA):
      // hand that page on now, so the next instruction's last tiles load early.
#ifndef MK_SAFE_PAGES
      if (c.lane == 0 && t > 0) {
        if (tma) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});
        else cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
        page_finish(c, lid(0, t - 1));
      }
#endif
    }
    if (c.lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    __syncwarp();
    if (c.lane == 0) {
#ifndef MK_SAFE_PAGES
      if (nt > 0) page_finish(c, lid(0, nt - 1));  // the last tile's output page
#else  // bisect switch: every page of the instruction's tiles freed here
      for (int k = 0; k < kIn; ++k)
        for (int t = 0; t < nt; ++t) page_finish(c, lid(k, t));
#endif
    }
    store_done(c);
  }
};

}  // namespace mk
