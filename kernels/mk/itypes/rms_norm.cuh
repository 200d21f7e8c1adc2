// RMSNorm(eps) over the last dim (seed §12, docs/itypes.md). One instruction = `rows` rows of C
// elements, each padded to 128 B in lid 0, loaded and stored row by row with 1-D bulk copies
// (generic copies when a row is not 16-byte aligned); the weight row lands in lid 1 the same way
// (L2-resident, so the extra copy costs no HBM traffic). Warp w normalises rows w, w+8, ... in fp32
// in place.
// [Note: page release order] the five unused lids first, then the weight (lid 1), then lid 0.
#pragma once
#include "mk/itypes/elementwise.cuh"

namespace mk {

// P: struct { static constexpr float eps; static constexpr bool has_weight; }
template <class P>
struct RMSNorm {
  static constexpr int num_semaphores = 2;  // loaded (bytes), computed (8 consumer warps)
  static __device__ int semaphore_count(int i) { return i == 0 ? 1 : kConsumerWarps; }
  static constexpr int kUsedPages = 2;
  static __device__ int lid_release_order(int q, const i32*) {
    return q < kNumPages - kUsedPages ? q + kUsedPages : kNumPages - 1 - q;
  }

  static __device__ int row_bytes(int C) { return (2 * C + 127) / 128 * 128; }
  // Rows can move by 1-D bulk copy: 16-byte aligned start and length.
  static __device__ bool bulk_ok(const SlotDesc& s, const i32* o, int C) {
    return (C % 8) == 0 && (s.dims[3] % 8) == 0 && (o[3] % 8) == 0 && (s.ptr % 16) == 0;
  }

  // Copies `rows` rows of C elements (row r at src + r * row_stride) to dst + r * rb, completing on
  // `bar` (bulk) or by generic copies (the caller arrives afterwards).
  static __device__ void copy_rows(Ctx& c, unsigned char* dst, const __nv_bfloat16* src, long long row_stride,
                                   int rows, int C, int rb, bool bulk, u64* bar) {
    if (bulk) {
      for (int r = c.lane; r < rows; r += 32)
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst + r * rb,
                                 src + r * row_stride, static_cast<u32>(2 * C), bar);
    } else {
      for (int r = 0; r < rows; ++r) {
        __nv_bfloat16* d = reinterpret_cast<__nv_bfloat16*>(dst + r * rb);
        for (int e = c.lane; e < C; e += 32) d[e] = src[r * row_stride + e];
      }
    }
  }

  static __device__ void load(Ctx& c) {
    if (!release_unused(c, kUsedPages)) return;
    if (!wait_inputs(c)) return;
    bool ok = true;
    if (c.lane == 0)
      for (int lid = 0; lid < kUsedPages && ok; ++lid)
        ok = page_wait_lane(c, lid);
    if (!warp_ok(c, ok)) return;
    const i32* idx = c.idx();
    const i32* o = idx;
    const int rows = idx[12], C = idx[13], rb = row_bytes(C);
    const SlotDesc& x = c.slot(c.src_slot(0));
    const __nv_bfloat16* xp = reinterpret_cast<const __nv_bfloat16*>(x.ptr) + elem_offset(x, o[0], o[1], o[2], o[3]);
    const bool xbulk = bulk_ok(x, o, C);
    bool wbulk = true;
    const __nv_bfloat16* wp = nullptr;
    if constexpr (P::has_weight) {
      const SlotDesc& ws = c.slot(c.src_slot(1));
      wp = reinterpret_cast<const __nv_bfloat16*>(ws.ptr) + elem_offset(ws, idx[8], idx[9], idx[10], idx[11]);
      wbulk = (C % 8) == 0 && (reinterpret_cast<unsigned long long>(wp) % 16) == 0;
    }
    // One barrier for both parts: announce the bulk bytes (no arrive), copy, then a single arrive
    // after the generic copies (if any) so the phase cannot complete before they are done.
    if (c.lane == 0) {
      const u32 bytes = (xbulk ? rows * 2 * C : 0) + (P::has_weight && wbulk ? 2 * C : 0);
      if (bytes)
        cuda::ptx::mbarrier_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                      c.sem(0), bytes);
    }
    __syncwarp();
    copy_rows(c, c.page(0), xp, x.dims[3], rows, C, rb, xbulk, c.sem(0));
    if constexpr (P::has_weight) copy_rows(c, c.page(1), wp, 0, 1, C, rb, wbulk, c.sem(0));
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(0));
  }

  static __device__ void compute(Ctx& c) {
    if (!wait(c, c.sem(0), 0)) return;
    const i32* idx = c.idx();
    const int rows = idx[12], C = idx[13], rb = row_bytes(C);
    const __nv_bfloat16* w = reinterpret_cast<const __nv_bfloat16*>(c.page(1));  // weight row (lid 1)
    const bool vec = (C % 8) == 0;
    for (int r = c.warp; r < rows; r += kConsumerWarps) {
      __nv_bfloat16* row = reinterpret_cast<__nv_bfloat16*>(c.page(0) + r * rb);
      float ss = 0.f;
      if (vec) {
#pragma unroll 4
        for (int j = c.lane; j < C / 8; j += 32) {
          const uint4 v = reinterpret_cast<const uint4*>(row)[j];
          const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const float2 f = __bfloat1622float2(h[k]);
            ss += f.x * f.x + f.y * f.y;
          }
        }
      } else {
        for (int e = c.lane; e < C; e += 32) {
          const float f = __bfloat162float(row[e]);
          ss += f * f;
        }
      }
#pragma unroll
      for (int m = 16; m > 0; m >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, m);
      const float inv = rsqrtf(ss / static_cast<float>(C) + P::eps);
      if (vec) {
#pragma unroll 4
        for (int j = c.lane; j < C / 8; j += 32) {
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
        for (int e = c.lane; e < C; e += 32) {
          const float g = P::has_weight ? __bfloat162float(w[e]) : 1.f;
          row[e] = __float2bfloat16_rn(__bfloat162float(row[e]) * inv * g);
        }
      }
    }
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the bulk store reads this page
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(1));
  }

  static __device__ void store(Ctx& c) {
    if (!wait_reuse(c)) return;
    if (!wait(c, c.sem(1), 0)) return;
    const i32* idx = c.idx();
    const i32* o = idx + 4;
    const int rows = idx[12], C = idx[13], rb = row_bytes(C);
    const SlotDesc& y = c.slot(c.dst_slot(0));
    __nv_bfloat16* dst = reinterpret_cast<__nv_bfloat16*>(y.ptr);
    unsigned char* page = c.page(0);
    if (bulk_ok(y, o, C)) {
      for (int r = c.lane; r < rows; r += 32)
        cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared,
                                 dst + elem_offset(y, o[0], o[1], o[2] + r, o[3]), page + r * rb,
                                 static_cast<u32>(2 * C));
      cuda::ptx::cp_async_bulk_commit_group();
      cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
    } else {
      for (int r = 0; r < rows; ++r) {
        const __nv_bfloat16* src = reinterpret_cast<const __nv_bfloat16*>(page + r * rb);
        __nv_bfloat16* row = dst + elem_offset(y, o[0], o[1], o[2] + r, o[3]);
        for (int e = c.lane; e < C; e += 32) row[e] = src[e];
      }
      __threadfence();
    }
    __syncwarp();
    if (c.lane == 0)
      for (int lid = 0; lid < kUsedPages; ++lid) page_finish(c, lid);
    store_done(c);
  }
};

}  // namespace mk
