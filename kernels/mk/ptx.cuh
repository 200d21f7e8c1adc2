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

// D(64x256, fp32 registers) (+)= A(64x16, smem) * B(16x256, smem), bf16 inputs: one warpgroup-collective
// wgmma.mma_async; scale_d = 0 overwrites D, 1 accumulates. d[4i + e] is row 16*warp + lane/4 + 8*(e/2),
// column 8i + 2*(lane%4) + e%2 of the warpgroup's tile.
// Transpose immediates chosen at compile time (Gemm flags): TransA = 0 for a
// K-major A (row-major (M, K) tile), 1 for an M-major A (row-major (K, M) tile, `ta`); TransB = 1 for an
// N-major B (row-major (K, N) tile), 0 for a K-major B (row-major (N, K) tile, `tb`).
template <int TransA, int TransB>
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], u64 desc_a, u64 desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, %131, %132;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB));
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

// Register budget per warpgroup (setmaxnreg, sm_90a): raise for the accumulator owners, lower elsewhere.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }

}  // namespace mk::ptx
