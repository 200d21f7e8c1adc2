// [Note: SIMT bodies] Instruction types whose tiles are small, irregular or not bf16 (Copy, Embedding,
// Cat, Rope, RowReduce; elementwise on fp16/fp32 or broadcast operands, or on tensors without a TMA
// tile map) run on the 256 consumer threads with plain global loads and stores: no pages, no
// semaphores. Each consumer warp waits on the global barriers itself; after the last store every
// consumer thread fences and meets the others at a named barrier, then one thread release-adds the dst
// barriers (the generic-store recipe of seed §11; readers fence the async proxy after they acquire).
// The loader only passes the seven page tokens on; the storer has nothing to do.
#pragma once
#include <cuda_fp16.h>

#include "mk/vm.cuh"

namespace mk {

// The host's DType order (src/ir/tensor.h), in SlotDesc::flags bits 8-15 (src/runtime/launch.cpp).
enum class Dt : int { bf16, f16, f32, i64, i32, b8 };
__device__ __forceinline__ Dt slot_dtype(const SlotDesc& s) { return static_cast<Dt>((s.flags >> 8) & 0xff); }

// Element offset of padded point (b, d, r, col) in a contiguous slot.
__device__ __forceinline__ long long elem_offset(const SlotDesc& s, int b, int d, int r, int col) {
  return ((static_cast<long long>(b) * s.dims[1] + d) * s.dims[2] + r) * s.dims[3] + col;
}

// Any slot dtype as fp32 (the reference's load, src/reference/exec.h); integers convert exactly below 2^24.
__device__ __forceinline__ float ld_f32(const SlotDesc& s, long long i) {
  switch (slot_dtype(s)) {
    case Dt::bf16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(s.ptr)[i]);
    case Dt::f16: return __half2float(reinterpret_cast<const __half*>(s.ptr)[i]);
    case Dt::f32: return reinterpret_cast<const float*>(s.ptr)[i];
    case Dt::i64: return static_cast<float>(reinterpret_cast<const long long*>(s.ptr)[i]);
    case Dt::i32: return static_cast<float>(reinterpret_cast<const int*>(s.ptr)[i]);
    default: return static_cast<float>(reinterpret_cast<const unsigned char*>(s.ptr)[i]);
  }
}
// Integer slots exactly (Embedding ids); floating slots truncate.
__device__ __forceinline__ long long ld_i64(const SlotDesc& s, long long i) {
  switch (slot_dtype(s)) {
    case Dt::i64: return reinterpret_cast<const long long*>(s.ptr)[i];
    case Dt::i32: return reinterpret_cast<const int*>(s.ptr)[i];
    default: return static_cast<long long>(ld_f32(s, i));
  }
}
// Rounds once to the slot's floating dtype (round to nearest even, as torch).
__device__ __forceinline__ void st_f32(const SlotDesc& s, long long i, float v) {
  switch (slot_dtype(s)) {
    case Dt::bf16: reinterpret_cast<__nv_bfloat16*>(s.ptr)[i] = __float2bfloat16_rn(v); break;
    case Dt::f16: reinterpret_cast<__half*>(s.ptr)[i] = __float2half_rn(v); break;
    default: reinterpret_cast<float*>(s.ptr)[i] = v; break;
  }
}

constexpr int kSimtThreads = kConsumerWarps * 32;
constexpr int kSimtBarrier = 1;  // named barrier id (0 is __syncthreads)

// Consumers: wait, run Body::run(c, tid) on every consumer thread, publish the stores. Every consumer thread
// reaches the named barrier, also after an abort, so no warp is left waiting there.
template <class Body>
__device__ __forceinline__ void simt_run(Ctx& c) {
  const bool ok = wait_inputs(c) && wait_reuse(c);
  if (ok) Body::run(c, c.warp * 32 + c.lane);
  __threadfence();
  ptx::named_sync<kSimtBarrier>(kSimtThreads);
  if (c.warp == 0 && ok) {
    const int n = c.num_dst();
    for (int k = c.lane; k < n; k += 32) ptx::red_release_gpu_add(c.g->c.barriers + c.inst()[kWDstBarriers + k], 1);
    __syncwarp();
  }
}

// Records an error found in the data (site 6: an index out of range), for the host to raise. The
// calling warp carries on; every role stops at its next wait, which sees the abort flag.
__device__ __forceinline__ void report_data_error(Ctx& c, int value, int target) {
  const bool was = c.aborted;
  raise_abort(c, 6, -1, value, target, 0);
  c.aborted = was;
}

// An IType whose whole work is Body::run(c, tid) (tid in [0, kSimtThreads)).
template <class Body>
struct Simt {
  static constexpr int num_semaphores = 0;
  static __device__ int semaphore_count(int) { return 1; }
  static __device__ int lid_release_order(int q, const i32*) { return q; }
  static __device__ void load(Ctx& c) { release_unused(c, 0); }
  static __device__ void compute(Ctx& c) { simt_run<Body>(c); }
  static __device__ void store(Ctx&) {}
};

}  // namespace mk
