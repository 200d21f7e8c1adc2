// The thin PTX layer: what CCCL's cuda::ptx (CUDA 13.0, CCCL 3.0) lacks for the Hopper VM
// (hopper-notes §3.2): elect.sync, griddepcontrol, mapa + remote cluster ops, mbarrier.inval,
// gpu-scope acquire/release counters, nanosleep, wgmma (fence/mma/commit/wait, descriptors; more
// shapes in mk/wgmma.cuh), named barriers, ex2 and setmaxnreg. Everything else comes from cuda::ptx.
#pragma once
#include <cuda/ptx>
#include <cuda/std/cstdint>

namespace mk::ptx {

using u32 = cuda::std::uint32_t;
using u64 = cuda::std::uint64_t;

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// One lane of the (full) warp returns true.
__device__ __forceinline__ bool elect_one() {
  u32 pred = 0;
  asm volatile(
      "{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(pred));
  return pred != 0;
}

// PDL: wait until the previous grid on the stream has completed and flushed its memory.
__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

__device__ __forceinline__ void mbarrier_inval(u64* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// The shared::cluster address of `p` (a CTA-local shared variable) in CTA `rank` of the cluster.
__device__ __forceinline__ u32 mapa(const void* p, u32 rank) {
  u32 out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(smem_addr(p)), "r"(rank));
  return out;
}

// Arrive (release, cluster scope) on the copy of mbarrier `bar` that lives in CTA `rank`.
__device__ __forceinline__ void mbarrier_arrive_cluster(u64* bar, u32 rank) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(mapa(bar, rank))
               : "memory");
}

// Load a word of CTA `rank`'s copy of shared variable `p`.
__device__ __forceinline__ u32 ld_cluster(const void* p, u32 rank) {
  u32 v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(mapa(p, rank)) : "memory");
  return v;
}

// Arrive on CTA `rank`'s copy of mbarrier `bar` with the default semantics (release, CTA scope), as a
// consumer releasing a multicast stage does: a cluster-scope release there waits for this thread's
// in-flight wgmma, serialising consecutive k-tiles (measured: ~0.5 us per k-tile, benchmarks/notes.md).
__device__ __forceinline__ void mbarrier_arrive_remote(u64* bar, u32 rank) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(mapa(bar, rank)) : "memory");
}

// Store a word into CTA `rank`'s copy of shared variable `p`.
__device__ __forceinline__ void st_cluster(u32* p, u32 rank, u32 v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(mapa(p, rank)), "r"(v) : "memory");
}

__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ int ld_volatile(const int* p) {
  int v;
  asm volatile("ld.volatile.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void red_release_gpu_add(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void nanosleep(u32 ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ u32 smid() {
  u32 s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// ---- wgmma (sm_90a; not in cuda::ptx 3.0) ----

// Orders this thread's register/shared accesses before the wgmma that follow (PTX wgmma.fence).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of `r` across a wgmma fence/wait.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(u32& r) { asm volatile("" : "+r"(r)::"memory"); }

// Shared-memory matrix descriptor for wgmma (PTX "matrix descriptor"): start address, leading and
// stride byte offsets (all >> 4), base offset 0 (atoms 1024-byte aligned), layout type 1 = 128-byte swizzle.
__device__ __forceinline__ u64 wgmma_desc_sw128(u32 smem_byte_addr, u32 lbo_bytes, u32 sbo_bytes) {
  return static_cast<u64>((smem_byte_addr & 0x3FFFFu) >> 4) | (static_cast<u64>((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (static_cast<u64>((sbo_bytes >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}
// The descriptor of the same layout `bytes` (a multiple of 16) further on: the start address field is bits
// [0, 14) of (address >> 4) and shared addresses stay below 256 KB, so the low word's add cannot carry out.
__device__ __forceinline__ u64 wgmma_desc_plus(u64 desc, u32 bytes) {
  return (desc & 0xffffffff00000000ull) | static_cast<u32>(static_cast<u32>(desc) + (bytes >> 4));
}

// The wgmma.mma_async wrappers themselves: kernels/mk/wgmma.cuh.

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 (not in cuda::ptx 3.0): four 8x8 16-bit matrices, lane l giving
// the shared address of row l % 8 of matrix l / 8; register j of lane l receives matrix j's row l / 4,
// columns 2 (l % 4) + {0, 1} (the lower column in the lower half).
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 smem_byte_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_byte_addr)
               : "memory");
}

// Named barriers (bar.sync / bar.arrive) over `n` threads; ID is a compile-time constant (a run-time
// ID makes ptxas reserve all 16). ID 0 is __syncthreads; the VM uses no other.
template <int ID>
__device__ __forceinline__ void named_sync(int n) { asm volatile("bar.sync %0, %1;" ::"n"(ID), "r"(n) : "memory"); }
template <int ID>
__device__ __forceinline__ void named_arrive(int n) { asm volatile("bar.arrive %0, %1;" ::"n"(ID), "r"(n) : "memory"); }

// 2^x (MUFU.EX2, flushes denormals; ex2(-inf) = +0).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// max(x, y) that returns NaN when either is NaN (fmaxf returns the other operand; sm_80+).
__device__ __forceinline__ float max_nan(float x, float y) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
  return r;
}

// Register budget per warpgroup (setmaxnreg, sm_90a): raise for the accumulator owners, lower elsewhere.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }

}  // namespace mk::ptx
