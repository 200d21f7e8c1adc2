// The thin PTX layer: what CCCL's cuda::ptx (CUDA 13.0, CCCL 3.0) lacks for the Hopper VM
// (hopper-notes §3.2): elect.sync, griddepcontrol, mapa + remote cluster ops, mbarrier.inval,
// gpu-scope acquire/release counters, nanosleep. Everything else comes from cuda::ptx.
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

}  // namespace mk::ptx
