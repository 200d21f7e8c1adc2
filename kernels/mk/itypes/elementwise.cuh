// ElementwiseUnary / ElementwiseBinary (seed §12, docs/itypes.md). One instruction = up to two
// 128x128 bf16 tiles side by side. Input k's tile t lands in lid 2k+t by TMA (no swizzle: rows of
// 256 B); the consumers compute in fp32 in place in input 0's pages; the storer TMA-stores them.
// [Note: page release order] unused lids first, then the other inputs' pages, then input 0's
// (the output), which are freed only after their stores have read shared memory.
#pragma once
#include "mk/simt.cuh"

namespace mk {

// Names as the host's UnaryStep (src/itypes/elementwise.h): codegen emits mk::Unary::<host op name>.
enum class Unary {
  identity, relu, abs, exp, exp2, log, log2, neg, sqrt, rsqrt,
  silu, gelu, gelu_tanh, sigmoid, tanh, cos, sin, reciprocal, square,
  add_scalar, mul_scalar, div_scalar, pow_scalar, clamp_min, clamp_max,  // read a constant k
};
enum class Binary { add, sub, mul, div, maximum, minimum };

template <Unary U>
inline constexpr bool kUnaryHasK = U >= Unary::add_scalar;

// fp32, the host reference's functions (accurate ones where it matters: erff, tanhf, sinf, cosf, powf).
template <Unary U>
__device__ __forceinline__ float unary(float x, float k = 0.f) {
  if constexpr (U == Unary::identity) return x;
  else if constexpr (U == Unary::relu) return x < 0.f ? 0.f : x;  // keeps NaN, as torch.relu
  else if constexpr (U == Unary::abs) return fabsf(x);
  else if constexpr (U == Unary::exp) return __expf(x);
  else if constexpr (U == Unary::exp2) return exp2f(x);
  else if constexpr (U == Unary::log) return __logf(x);
  else if constexpr (U == Unary::log2) return log2f(x);
  else if constexpr (U == Unary::neg) return -x;
  else if constexpr (U == Unary::sqrt) return sqrtf(x);
  else if constexpr (U == Unary::rsqrt) return rsqrtf(x);
  else if constexpr (U == Unary::silu) return __fdiv_rn(x, 1.f + __expf(-x));
  else if constexpr (U == Unary::gelu) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  else if constexpr (U == Unary::gelu_tanh) {
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2/pi)
    return 0.5f * x * (1.f + tanhf(inner));
  }
  else if constexpr (U == Unary::sigmoid) return __frcp_rn(1.f + __expf(-x));
  else if constexpr (U == Unary::tanh) return tanhf(x);
  else if constexpr (U == Unary::cos) return cosf(x);
  else if constexpr (U == Unary::sin) return sinf(x);
  else if constexpr (U == Unary::reciprocal) return __frcp_rn(x);
  else if constexpr (U == Unary::square) return x * x;
  else if constexpr (U == Unary::add_scalar) return x + k;
  else if constexpr (U == Unary::mul_scalar) return x * k;
  else if constexpr (U == Unary::div_scalar) return __fdiv_rn(x, k);  // exact, as eager x / k
  else if constexpr (U == Unary::pow_scalar) return powf(x, k);
  else if constexpr (U == Unary::clamp_min) return x < k ? k : x;  // NaN stays NaN, as torch.clamp_min
  else if constexpr (U == Unary::clamp_max) return x > k ? k : x;
  else static_assert(U == Unary::identity, "mk::unary: an mk::Unary without a body");
}

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

// P: struct { static constexpr Binary op; static constexpr float alpha; static constexpr unsigned
// bcast_a, bcast_b; } (broadcast masks: bit k = padded dim k, docs/itypes.md).
template <class P>
struct BinaryFn {
  static constexpr int inputs = 2;
  static constexpr __device__ unsigned bcast(int k) { return k == 0 ? P::bcast_a : P::bcast_b; }
  static __device__ __forceinline__ float apply(const float (&v)[2]) {
    const float a = v[0], b = v[1];
    if constexpr (P::op == Binary::add) return a + P::alpha * b;
    else if constexpr (P::op == Binary::sub) return a - P::alpha * b;
    else if constexpr (P::op == Binary::mul) return a * b;
    else if constexpr (P::op == Binary::div) return __fdiv_rn(a, b);
    else if constexpr (P::op == Binary::maximum) return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
    else return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
  }
};

template <class F>
struct Elementwise {
  static constexpr int kIn = F::inputs;
  static constexpr int kTile = 128;
  static constexpr int kUsedPages = 2 * kIn;
  // Indices: origin of input k at 4k, output origin at 4*kIn, then rows, cols.
  static constexpr int kOut = 4 * kIn, kRows = 4 * kIn + 4, kCols = 4 * kIn + 5;
  static constexpr int num_semaphores = 4;  // loaded[2] (TMA bytes), computed[2] (8 consumer warps)

  static __device__ int semaphore_count(int i) { return i < 2 ? 1 : kConsumerWarps; }

  static __device__ int lid_release_order(int q, const i32*) {
    const int unused = kNumPages - kUsedPages;
    if (q < unused) return kUsedPages + q;
    q -= unused;                       // then inputs kIn-1 .. 0, two pages each
    return kUsedPages - 2 - 2 * (q / 2) + (q % 2);
  }

  static __device__ int num_tiles(const Ctx& c) { return c.idx()[kCols] > kTile ? 2 : 1; }

  static __device__ void load(Ctx& c) {
    if (!release_unused(c, kUsedPages)) return;
    if (!wait_inputs(c)) return;
    bool ok = true;
    if (c.lane == 0) {
      for (int lid = 0; lid < kUsedPages && ok; ++lid)
        ok = page_wait_lane(c, lid);
      const int nt = num_tiles(c);
      const i32* idx = c.idx();
      for (int t = 0; t < nt && ok; ++t) {
#ifdef MK_EXP_EW_NO_LOAD  // experiment (benchmarks/notes.md): time the pipeline without the loads
        arrive(c.sem(t));
        continue;
#endif
        (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                   cuda::ptx::space_shared, c.sem(t), kIn * kPageBytes);
        for (int k = 0; k < kIn; ++k) {
          const i32* o = idx + 4 * k;
          const i32 coords[4] = {o[3] + t * kTile, o[2], o[1], o[0]};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, c.page(2 * k + t),
                                          c.map(c.src_slot(k)), coords, c.sem(t));
        }
      }
    }
    warp_ok(c, ok);
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
        for (int k = 0; k < kIn; ++k) in[k] = reinterpret_cast<const uint4*>(c.page(2 * k + t))[v];
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
      if (c.lane == 0) arrive(c.sem(2 + t));
    }
  }

  static __device__ void store(Ctx& c) {
    if (!wait_reuse(c)) return;
    const i32* idx = c.idx();
    const i32* o = idx + kOut;
    const int rows = idx[kRows], cols = idx[kCols], nt = num_tiles(c);
    const int ys = c.dst_slot(0);
    const SlotDesc& y = c.slot(ys);
    for (int t = 0; t < nt; ++t) {
      if (!wait(c, c.sem(2 + t), 0)) return;
      const int c0 = o[3] + t * kTile, tc = min(kTile, cols - t * kTile);
      // TMA clips at the tensor's edge only; a tile that ends inside the tensor is stored by hand.
#ifdef MK_EXP_EW_NO_STORE  // experiment: time the pipeline without the stores
      continue;
#endif
      const bool tma = (y.flags & 1) && (rows == kTile || o[2] + rows == y.dims[2]) &&
                       (tc == kTile || c0 + tc == y.dims[3]);
      if (tma) {
        if (c.lane == 0) {
          const i32 coords[4] = {c0, o[2], o[1], o[0]};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, c.map(ys), coords,
                                          c.page(t));
          cuda::ptx::cp_async_bulk_commit_group();
        }
      } else {
        const __nv_bfloat16* src = reinterpret_cast<const __nv_bfloat16*>(c.page(t));
        __nv_bfloat16* dst = reinterpret_cast<__nv_bfloat16*>(y.ptr);
        for (int r = 0; r < rows; ++r)
          for (int e = c.lane; e < tc; e += 32) dst[elem_offset(y, o[0], o[1], o[2] + r, c0 + e)] = src[r * kTile + e];
        __threadfence();
      }
    }
    if (c.lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    __syncwarp();
    if (c.lane == 0)
      for (int lid = 0; lid < kUsedPages; ++lid) page_finish(c, lid);
    store_done(c);
  }
};

}  // namespace mk
