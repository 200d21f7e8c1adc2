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
// Integer slots exactly (Embedding ids); floating slots truncate. NaN and +-inf (megakittens/float_ids.py's
// marks for ids fp32 cannot hold) read as -1, which every range check refuses: cvt would make NaN 0, a row.
__device__ __forceinline__ long long ld_i64(const SlotDesc& s, long long i) {
  switch (slot_dtype(s)) {
    case Dt::i64: return reinterpret_cast<const long long*>(s.ptr)[i];
    case Dt::i32: return reinterpret_cast<const int*>(s.ptr)[i];
    default: {
      const float f = ld_f32(s, i);
      return f >= -9.0e18f && f <= 9.0e18f ? static_cast<long long>(f) : -1LL;
    }
  }
}
// Rounds once to a floating dtype (round to nearest even, as torch); elements at ptr.
__device__ __forceinline__ void st_f32(u64 ptr, Dt dt, long long i, float v) {
  switch (dt) {
    case Dt::bf16: reinterpret_cast<__nv_bfloat16*>(ptr)[i] = __float2bfloat16_rn(v); break;
    case Dt::f16: reinterpret_cast<__half*>(ptr)[i] = __float2half_rn(v); break;
    default: reinterpret_cast<float*>(ptr)[i] = v; break;
  }
}
__device__ __forceinline__ void st_f32(const SlotDesc& s, long long i, float v) { st_f32(s.ptr, slot_dtype(s), i, v); }

constexpr int kSimtThreads = kConsumerWarps * 32;
constexpr int kSimtBarrier = kConsumerBarrier;

// [Note: SIMT chunks] A body walks its tile in chunks of V elements along a row: V = 8 when every slot
// it touches is bf16 and each chunk is 16-byte aligned (one 128-bit load or store), else V = 1 (any
// dtype). A thread issues all loads of a chunk before it converts, computes and stores: a dtype switch
// between a load and its use made the SASS of the per-element loops wait on every load. One chunk at a
// time by default: the interpreter is one function capped at 168 registers (384 threads), and 2-4 chunks
// in flight per thread made ptxas spill in the Attention and Gemm bodies of a Llama kernel
// (tests/test_nvrtc.py test_llama_layer_source_compiles_without_spills). Rope keeps several in flight
// (chunked<U>): one chunk at a time cost ~10 us per 128 x 128 instruction, a memory round trip per chunk,
// 50 us of every 8B layer's critical path (benchmarks/notes.md Session 20).

// Warp-wide reductions of the row bodies (RowReduce, Softmax, LayerNorm: a warp per row; every lane gets
// the result). warp_max_nan: NaN if any lane saw one (its partial max m skips NaNs: fmaxf would drop them).
__device__ __forceinline__ float warp_sum_f32(float v) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
  return v;
}
__device__ __forceinline__ float warp_max_nan(float m, bool nan) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, k));
  return __any_sync(0xffffffffu, nan) ? __int_as_float(0x7fffffff) : m;
}
// A row's max over this lane's elements e = lane, lane + 32, ... < C of row offset `row`; `nan` set if any
// was NaN (feed both to warp_max_nan).
__device__ __forceinline__ float lane_max(const SlotDesc& s, long long row, int C, int lane, bool& nan) {
  float m = -__int_as_float(0x7f800000);
  for (int e = lane; e < C; e += 32) {
    const float f = ld_f32(s, row + e);
    nan |= f != f;
    m = f > m ? f : m;
  }
  return m;
}

// Strides in elements of a contiguous slot's padded dims; -1 (a broadcast or 1-wide view dim) is 0.
__device__ __forceinline__ long long dim_stride(const SlotDesc& s, int d) {
  long long st = 1;
  for (int k = 3; k > d; --k) st *= s.dims[k];
  return d < 0 ? 0 : st;
}

// Element (i, j) of a tile of a slot lies at base + i * rs + j * cs elements from ptr.
struct TileView {
  u64 ptr;
  long long base, rs, cs;
  Dt dt;
  __device__ long long at(int i, int j) const { return base + i * rs + j * cs; }
};
// The tile with origin o whose rows and columns run along the slot's padded dims rdim and cdim (-1: none).
__device__ __forceinline__ TileView tile_view(const SlotDesc& s, const i32* o, int rdim, int cdim) {
  return {s.ptr, elem_offset(s, o[0], o[1], o[2], o[3]), dim_stride(s, rdim), dim_stride(s, cdim), slot_dtype(s)};
}
// Whether 8-element chunks at column multiples of 8 are aligned 16-byte bf16 vectors (cs 1), or one
// bf16 element each (cs 0: a broadcast column, splat on load).
__device__ __forceinline__ bool vec8_ok(const TileView& t) {
  return t.dt == Dt::bf16 && (t.ptr & 15) == 0 && t.base % 8 == 0 && t.rs % 8 == 0 && (t.cs == 1 || t.cs == 0);
}

// V elements as loaded: 8 bf16 in a uint4, or one element of any dtype in the low bits of a u64.
template <int V> struct Raw;
template <> struct Raw<8> { uint4 v; };
template <> struct Raw<1> { u64 v; };

// Loads V elements at element offset i; issues the load only (no conversion, no dependent branch).
template <int V>
__device__ __forceinline__ Raw<V> ld_raw(const TileView& t, long long i) {
  if constexpr (V == 8) {
    if (t.cs == 0) {
      const u32 b = reinterpret_cast<const unsigned short*>(t.ptr)[i];
      const u32 w = b | (b << 16);
      return {make_uint4(w, w, w, w)};
    }
    return {*reinterpret_cast<const uint4*>(reinterpret_cast<const __nv_bfloat16*>(t.ptr) + i)};
  } else {
    switch (t.dt) {
      case Dt::bf16: case Dt::f16: return {reinterpret_cast<const unsigned short*>(t.ptr)[i]};
      case Dt::f32: case Dt::i32: return {reinterpret_cast<const u32*>(t.ptr)[i]};
      case Dt::i64: return {reinterpret_cast<const u64*>(t.ptr)[i]};
      default: return {reinterpret_cast<const unsigned char*>(t.ptr)[i]};
    }
  }
}
// The loaded elements as fp32 (the reference's load, src/reference/exec.h; integers exact below 2^24).
template <int V>
__device__ __forceinline__ void to_f32(Dt dt, const Raw<V>& r, float (&f)[V]) {
  if constexpr (V == 8) {
    const u32 w[4] = {r.v.x, r.v.y, r.v.z, r.v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f[2 * k] = __uint_as_float(w[k] << 16);
      f[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
    }
  } else {
    const u64 b = r.v;
    switch (dt) {
      case Dt::bf16: f[0] = __uint_as_float(static_cast<u32>(b) << 16); break;
      case Dt::f16: f[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(b))); break;
      case Dt::f32: f[0] = __uint_as_float(static_cast<u32>(b)); break;
      case Dt::i64: f[0] = static_cast<float>(static_cast<long long>(b)); break;
      case Dt::i32: f[0] = static_cast<float>(static_cast<i32>(static_cast<u32>(b))); break;
      default: f[0] = static_cast<float>(static_cast<u32>(b)); break;
    }
  }
}
// Stores V values at element offset i, each rounded once to the slot's floating dtype (nearest even).
template <int V>
__device__ __forceinline__ void st_vec(const TileView& t, long long i, const float (&f)[V]) {
  if constexpr (V == 8) {
    u32 w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
      w[k] = *reinterpret_cast<const u32*>(&h);
    }
    *reinterpret_cast<uint4*>(reinterpret_cast<__nv_bfloat16*>(t.ptr) + i) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    st_f32(t.ptr, t.dt, i, f[0]);
  }
}

// Runs emit(e, load(e)) for chunks e = first, first + stride, ... < n: load only issues the loads (ld_raw),
// emit converts, computes and stores ([Note: SIMT chunks]). U > 1 issues the loads of U chunks before the
// first emit: one memory round trip per U chunks, for a body whose few registers allow it (Rope).
template <int U = 1, class Load, class Emit>
__device__ __forceinline__ void chunked(int first, int n, int stride, Load load, Emit emit) {
  int e = first;
  if constexpr (U > 1) {
    for (; e + (U - 1) * stride < n; e += U * stride) {
      decltype(load(e)) l[U];
#pragma unroll
      for (int u = 0; u < U; ++u) l[u] = load(e + u * stride);
#pragma unroll
      for (int u = 0; u < U; ++u) emit(e + u * stride, l[u]);
    }
  }
  for (; e < n; e += stride) emit(e, load(e));
}

// A stack of nd tiles: tile k of view v starts k * step[v] elements after tile 0 (Copy's d slices).
template <int N>
struct TileStack {
  int nd;
  long long x[N], y;
};

template <int V, int N, class F>
__device__ __forceinline__ void tile_map_v(const TileView (&x)[N], const TileView& y, int rows, int cols, int tid,
                                           bool rows_fast, const TileStack<N>& st, F f) {
  struct Loaded { Raw<V> r[N]; };
  const int cpr = cols / V, plane = rows * cpr;
  auto kij = [&](int e, int& d, int& i, int& j) {
    d = e / plane;
    e -= d * plane;
    if (rows_fast) { i = e % rows; j = e / rows; }
    else { i = e / cpr; j = (e - i * cpr) * V; }
  };
  chunked(tid, st.nd * plane, kSimtThreads,
      [&](int e) {
        int d, i, j;
        kij(e, d, i, j);
        Loaded l;
#pragma unroll
        for (int k = 0; k < N; ++k) l.r[k] = ld_raw<V>(x[k], x[k].at(i, j) + d * st.x[k]);
        return l;
      },
      [&](int e, const Loaded& l) {
        int d, i, j;
        kij(e, d, i, j);
        float in[N][V], out[V];
#pragma unroll
        for (int k = 0; k < N; ++k) to_f32<V>(x[k].dt, l.r[k], in[k]);
#pragma unroll
        for (int q = 0; q < V; ++q) {
          float a[N];
#pragma unroll
          for (int k = 0; k < N; ++k) a[k] = in[k][q];
          out[q] = f(a);
        }
        st_vec<V>(y, y.at(i, j) + d * st.y, out);
      });
}

// y(i, j) = f(x_0(i, j), ..., x_{N-1}(i, j)) over a rows x cols tile (f: float[N] -> float), or over each
// tile of a stack; rows_fast walks consecutive threads down a column (a transposing read). 8-element
// chunks when every view allows.
template <int N, class F>
__device__ __forceinline__ void tile_map(const TileView (&x)[N], const TileView& y, int rows, int cols, int tid,
                                         bool rows_fast, F f, const TileStack<N>& st = TileStack<N>{1, {}, 0}) {
  bool vec = cols % 8 == 0 && !rows_fast && vec8_ok(y) && y.cs == 1 && st.y % 8 == 0;
#pragma unroll
  for (int k = 0; k < N; ++k) vec = vec && vec8_ok(x[k]) && st.x[k] % 8 == 0;
  if (vec) tile_map_v<8>(x, y, rows, cols, tid, false, st, f);
  else tile_map_v<1>(x, y, rows, cols, tid, rows_fast, st, f);
}

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

// Records an error found in the data (site 6: an index out of range), for the host to raise at the next
// launch (or this one under `sync`), without aborting: the launch runs to its end, so its outputs are
// computed, with the bad rows as the caller made them (the Embedding's are NaN), instead of left unwritten
// by roles that stopped. Once per launch: word kDataErrorWord of the state (after the abort flag and the
// work queue; zero until the host's reset after it raised); never over an abort's record.
constexpr int kDataErrorWord = 2;
__device__ __forceinline__ void report_data_error(Ctx& c, int value, int target) {
  if (!abort_raised(c) && atomicCAS(c.g->c.abort_flag + kDataErrorWord, 0, 1) == 0)
    write_diag(c, 6, -1, value, target, 0);
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
