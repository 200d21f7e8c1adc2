// Pieces shared by the wgmma ITypes (Gemm, Attention): 64 x 64 16-bit TMA boxes with 128-byte swizzle
// ([Note: wgmma descriptors] in mk/itypes/gemm.cuh), the consumers' mbarrier wait in front of wgmma and
// the swizzled address of an epilogue element pair.
#pragma once
#include "mk/half.cuh"
#include "mk/vm.cuh"
#include "mk/wgmma.cuh"

namespace mk {

constexpr int kBox = 64, kBoxBytes = kBox * kBox * 2;  // one 64x64 bf16 / fp16 TMA box: 8 KB, 128-byte rows

// Consumer wait while wgmma may be in flight: every lane polls the mbarrier itself and the watchdog is
// inlined, because a lane-0 branch or a function call in front of the wgmma makes ptxas serialize them
// (C7518). Returns 0 when the phase completed, 1 when another warp aborted, 2 on a timeout (`waited`
// set; the caller reports it once no wgmma is pending).
__device__ __forceinline__ int poll_mbarrier(const Ctx& c, u64* bar, u32 parity, long long& waited) {
  if (cuda::ptx::mbarrier_try_wait_parity(bar, parity)) return 0;
  u64 start = 0;
  u32 spins = 0;
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity))
    if ((++spins & kWatchEvery) == 0) {
      if (ptx::ld_volatile(c.g->c.abort_flag) != 0) return 1;
      const u64 now = ptx::globaltimer(), timeout = c.g->c.timeout_ns;
      if (start == 0) start = now;
      else if (timeout != 0 && now - start >= timeout) {
        waited = static_cast<long long>(now - start);
        return 2;
      }
    }
  return 0;
}

// poll_mbarrier for a whole warp, warp-uniform (wgmma_wait is .aligned). False on abort, after the
// warpgroup's pending wgmma drained and a timeout was reported (site 3, mbarrier `id`).
// Fast path: one try_wait per lane (the hardware suspends the warp in it for a while) and a VOTE.ALL; the
// polling loop, its REDUX vote and the reconvergence around them only when the phase is still open (ncu
// on the H200, attention (16, 16, 2048, 128): the REDUX path's overhead took ~10% of the consumer loop's
// samples at three waits a turn, more than the waits themselves).
// On by default (H200, 2026-12-03, benchmarks/notes.md Session 25: attention (16, 16, 2048, 128) full
// 526 -> 548 TFLOP/s, the loop 52.1k -> 50.1k cycles; Gemm 4096^3 0.87 -> 0.90x cuBLAS, 8192^3 0.92 -> 0.95x);
// MK_MMA_WAIT_FAST=0 restores the plain poll.
#ifndef MK_MMA_WAIT_FAST
#define MK_MMA_WAIT_FAST 1
#endif
__device__ __forceinline__ bool mma_wait(Ctx& c, u64* bar, u32 parity, int id) {
  if (MK_MMA_WAIT_FAST && __all_sync(0xffffffffu, cuda::ptx::mbarrier_try_wait_parity(bar, parity))) return true;
  long long waited = 0;
  const int r = __reduce_max_sync(0xffffffffu, poll_mbarrier(c, bar, parity, waited));
  if (r == 0) return true;
  ptx::wgmma_wait<0>();
  if (r == 2) raise_abort(c, 3, id, static_cast<int>(parity), -1, waited);
  c.aborted = true;
  return false;
}

// Byte address of the 4-byte element pair (row r, 16-byte chunk `chunk`, pair q < 4 of the chunk) in a
// 64-column box written in the TMA SWIZZLE_128B layout (row r at r * 128, chunk j at j ^ (r % 8)).
__device__ __forceinline__ unsigned char* swizzled_pair(unsigned char* box, int r, int chunk, int q) {
  return box + r * 128 + (((chunk ^ r) & 7) << 4) + q * 4;
}

}  // namespace mk
