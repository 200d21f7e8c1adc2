// Attention: o = softmax(scale * q k^T + mask) v in fp32, bf16 (P::f16: fp16) in and out (DESIGN §7, hopper-notes
// §2.2, docs/itypes.md). One instruction = 128 query rows [s0, s0 + 128) of one (b, h) (q_rows of them
// real, the rest past Sq and never stored) against keys [0, kv_end) of KV head hk, FlashAttention-3
// style: K/V streamed through pages, S = Q K^T by wgmma, online softmax in fp32 registers (exp2 with
// scale * log2(e) folded in), P as the register A operand of O += P V.
//
// Roles.
// - Loader (warp 9, one box per lane): TMA Q (128 x D, 64x64 boxes, 128-byte swizzle) into lid 0, then
//   the kv blocks: block kb = keys [kb*BN, kb*BN + BN), its K and V tiles into stage kb % kStages, K_kb
//   before V_{kb-1}; fullK / fullV (TMA bytes) per stage, emptyK / emptyV (8 consumer warps) hand a
//   stage's K half back once S_kb has landed and its V half after the P V ([Note: attention split
//   release]). Drain: each stage's pages are released once its last block is consumed.
// - Consumers (warps 0-7): warpgroup w owns query rows 64w..64w+63: S (64 x BN, BN/2 fp32 registers
//   per thread), O (64 x D, D/2 registers), P (bf16, BN/4 registers). Turn 0 issues S_0; turn kb
//   issues S_kb, rescales O by the previous block's correction while S_kb runs, issues
//   O += P_{kb-1} V_{kb-1}, then the softmax of S_kb runs while the P V wgmma is in flight
//   (intra-warpgroup overlap, [Note: attention overlap]); the last turn issues the last P V.
//   Ping-pong (full attention; MK_ATTN_PINGPONG): the two warpgroups take turns issuing (mbarriers
//   turn[0], turn[1]), so one's softmax overlaps the other's wgmma. Epilogue: O / l in bf16 into the
//   warpgroup's own Q boxes in lid 0 (no other warpgroup reads them), proxy fence, staged[w].
// - Storer (warp 10): reuse barriers, waits staged[0] and staged[1] (both, so that lid 0 is free of
//   every reader), TMA-stores the boxes of rows < q_rows (clipped at Sq), releases lid 0, store_done.
//
// [Note: attention pages] lid 0 = Q (boxes (row box i, d half j) at j * 16 KB + i * 8 KB), later O.
// A K or V tile (BN x D) keeps the same box order: (i, j) at j * BN * 128 + i * 8 KB, so both are
// 1024-byte-aligned 128-byte-swizzled rows ([Note: wgmma descriptors], gemm.cuh). One stage = K + V:
// 32 KB = one page (D = 64, BN = 128 or D = 128, BN = 64; 6 stages, lids 1..6, V at +16 KB) or 64 KB =
// two pages (D = 128, BN = 128; 3 stages, lids (1, 2), (3, 4), (5, 6)). lid_release_order: the pages
// of unused stages, then the stages in the order their last block drains, lid 0 last.
//
// Descriptors (128-byte swizzle, SBO = 1024 = eight 128-byte rows):
// - S = Q K^T, k16 step t < D/16: A = Q (K-major) at Q + (t/4) * 16 KB + w * 8 KB + 32 t%4 (LBO
//   unused), B = K as K-major (N = BN key rows of 128 B) at K + (t/4) * BN*128 + 32 t%4.
// - O += P V, k16 step t < BN/16: A = P registers ([Note: wgmma register A], mk/wgmma.cuh), B = V
//   as N-major (imm-trans-b = 1): d halves LBO = BN*128 apart, step t at V + 2048 t.
//
// Masking: column j of row i is masked (-inf, so P = 0) when j >= kv_end, or j > i when causal
// (top-left, as SDPA). Block 0 always holds key 0, which no row masks, so the running max is finite
// from the first block on. [Note: attention kv blocks] (src/itypes/attention.cpp): the host declares
// K/V reads up to the end of the last block, so the masked rows of V that P = 0 multiplies are
// written data (0 * NaN would poison O). A 64-row box that would start at or past its sequence end
// loads that sequence's last 64 rows instead (masked or never stored), so every box is partly in
// bounds and TMA zero-fills the rest.
//
// Registers: S (BN/2) + P (BN/4) + O (D/2) fp32/bf16x2 per thread live together while the P V wgmma is
// in flight: ~200 at D = 128, BN = 128, within the consumers' 216 of the VM's setmaxnreg split
// (mk/vm.cuh); MK_ATTN_BN_D128=64 fits the plain 168.
//
// [Note: attention mask] P::masked: input 3 is an additive mask of q's dtype, a whole (Bm, Hm, Sqm, Sk) tensor
// whose dims of extent 1 broadcast (src/itypes/attention.cpp mask_view). It is a late input: each consumer
// warp waits for its barriers and reads its own entries with plain loads (no page holds it), pairs of
// columns as the S fragment has them, issued at the start of the turn so that they land under the waits
// and the S wgmma. Scores are then kept in natural units, t = s * scale + mask, and the exponent is
// (t - m) * log2(e): a mask entry of the dtype's lowest finite value (Hugging Face's) stays finite in t, so a
// row with every key so masked averages V, as eager does, instead of turning NaN; a row whose every key is
// -inf gives 0 (PyTorch's _safe_softmax). D = 128 takes 64-key blocks then (registers: the mask's BN / 4).
// [Note: fp16 mask lowest] fp16's lowest finite value (-65504, an fp16 model's Hugging Face mask) would not
// absorb the score in fp32 as bf16's and fp32's lowest do: where every key of a row is so masked, eager's
// written-out attention (whose scores + mask round to fp16) averages V while an fp32 sum weights V by the
// scores. So an fp16 mask entry of -65504 stands for bf16's lowest (-3.39e38): the row averages V, in both
// dtypes and as the fp32 model does; rows with a key left are the same either way (exp2 of -65504 - m is 0).
//
// Layouts: P::bshd bit k (q, k, v) = that operand is a (B, S, H, D) tensor read as (B, H, S, D): its
// TMA map is the slot's second xmap (box 64 d x 1 head x 64 rows, src/runtime/launch.cpp) and the
// box coordinates are (d, h, s, b) instead of (d, s, h, b). Bit 3: the output o is stored that way.
#pragma once
#include <cuda/std/limits>

#include "mk/tile.cuh"

#ifndef MK_ATTN_BN_D128  // kv block rows for D = 128: 128 (3 stages; needs the setmaxnreg split) or 64 (6)
#define MK_ATTN_BN_D128 128
#endif
// Ping-pong: 1 always, 0 never (the warpgroups issue independently), 2 (default) full attention only.
// H200, 2026-12-03, (16, 16, 2048, D) TFLOP/s per_sm / global, same kernels otherwise (benchmarks/notes.md
// Session 25): causal runs faster without it (D 128 336 / 373 -> 366 / 409, D 64 187 / 208 -> 205 / 232;
// Session 23 saw the same), full with it (D 64 322 / 328 -> 356 / 361; D 128 equal).
#ifndef MK_ATTN_PINGPONG
#define MK_ATTN_PINGPONG 2
#endif
// [Note: two loaders] (mk/vm.cuh) for Attention too: this loader drains its stages (waits for the last
// blocks to be consumed) before it can begin the next instruction, so with one loader the next Q and
// first K / V blocks went out only after this one's mainloop. H200, 2026-12-03: HF 8B 4 layers 8.11 ->
// 7.71 ms, 1B 16 layers 6.89 -> 6.79 ms (benchmarks/notes.md Session 19). 0: one loader warp.
// [Note: attention overlap]: 0 lets ptxas hoist the P V wait above the softmax again (for A/B runs).
#ifndef MK_ATTN_SPLIT_SOFTMAX
#define MK_ATTN_SPLIT_SOFTMAX 1
#endif
// [Note: attention wait stats] MK_ATTN_WAIT_STATS=1 (timeline only; an experiment): consumer warp 0 splits
// its loop's SM cycles (turns 1 .. nb-1) into K / V waits, turn waits, the issue (S, rescale, P V, the turn
// passed), the wait for S, the softmax and the wait for P V; the rest is the releases, the pack of P and
// the loop itself (lapped apart from the K / V waits: the pack is 32 conversions a block). Timeline words
// kEvMainloopCycles (the loop), kEvFullWaitCycles (K / V after the ring's first wrap), kEvEmptyWaitCycles
// (K / V before it) and kEvAttn* (mk/vm.cuh), and the loop's begin and end times in kEvFirstFull /
// kEvMainloopEnd; benchmarks/timeline.py prints the shares, the SM clock and the loop's share of the
// instruction's compute.
#ifndef MK_ATTN_WAIT_STATS
#define MK_ATTN_WAIT_STATS 0
#endif
#ifndef MK_ATTN_TWO_LOADERS
#define MK_ATTN_TWO_LOADERS 1
#endif
// [Note: attention split release] 1: K_kb's stage half is handed back once S_kb has landed (turn kb) and
// V_kb's after its P V (turn kb + 1), each on its own empty barrier, and the loader issues K_kb before
// V_{kb-1} (FA3's order); 0: one empty barrier per stage, released after the P V, K and V reloaded
// together. H200, 2026-12-03, (16, 16, 2048, 128) full: 506 / 516 -> 536 / 540 TFLOP/s (per_sm /
// global); D 64 and causal unchanged within noise (benchmarks/notes.md Session 24).
#ifndef MK_ATTN_SPLIT_RELEASE
#define MK_ATTN_SPLIT_RELEASE 1
#endif
// [Note: softmax chains] independent max / sum chains per row half (1, 2, 4 or 8; 1 = one serial chain).
#ifndef MK_ATTN_SOFTMAX_CHAINS
#define MK_ATTN_SOFTMAX_CHAINS 4
#endif

// [Note: attention poly exp2] At D = 64 the exponentials take as long as the wgmmas: a 64 x BN block of S
// costs 64 * BN exponentials on the SM's 16 MUFU lanes a clock (CUDA C++ Programming Guide, arithmetic
// throughput, cc 9.0) and 2 * 64 * BN * 64 MACs on its 2048 bf16 MACs a clock: 4 * BN clocks each. So
// MK_ATTN_POLY_EXP2 of every 8 exponentials at D = 64 (MK_ATTN_POLY_EXP2_D128 at D = 128) are computed on the
// FMA pipe instead (ex2_poly: ~9 instructions against MUFU's 8 clocks a warp), which balances the two
// pipes near 2 of 8. 0: every exponential on MUFU.
#ifndef MK_ATTN_POLY_EXP2
#define MK_ATTN_POLY_EXP2 0
#endif
#ifndef MK_ATTN_POLY_EXP2_D128
#define MK_ATTN_POLY_EXP2_D128 0
#endif

namespace mk {

// 2^x without MUFU ([Note: attention poly exp2]): x = j + f with j = round(x), f in [-0.5, 0.5]; 2^f by a
// degree-3 polynomial (coefficients fitted here for least relative error on [-0.5, 0.5]: at most 7.6e-5,
// below bf16's and fp16's rounding of P), 2^j built in the exponent bits. x is clamped at -127 (NaN kept),
// where 2^j's bits are 0, so -inf and underflow give +0 as ex2.approx.ftz does. The adds are __fadd_rn so
// that no fast-math rewrite folds the rounding constant away.
__device__ __forceinline__ float ex2_poly(float x) {
  x = ptx::max_nan(x, -127.f);
  constexpr float kRound = 12582912.f;                  // 1.5 * 2^23: t's low mantissa bits hold round(x)
  const float t = __fadd_rn(x, kRound);
  const float f = __fsub_rn(x, __fsub_rn(t, kRound));
  const float p = fmaf(fmaf(fmaf(0.0551802665f, f, 0.242611915f), f, 0.693259418f), f, 0.999927998f);
  // (t's bits << 23) = j << 23 (mod 2^32): 2^j as a float, 0 at j = -127, 0.5 at j = -1, 1 at j = 0.
  return p * __int_as_float(static_cast<int>((static_cast<unsigned>(__float_as_int(t)) << 23) + 0x3f800000u));
}

// P: struct { static constexpr bool causal; static constexpr float scale_log2;  // scale * log2(e)
//             static constexpr int head_dims;  // bit 0: D = 64 instantiated, bit 1: D = 128
//             static constexpr unsigned bshd;  // bit 0 q, 1 k, 2 v, 3 o (src/itypes/attention.h)
//             static constexpr bool masked; static constexpr float scale;  // [Note: attention mask]
//             static constexpr bool f16; }  // fp16 operands, else bf16
template <class P>
struct Attention {
  using H = Half<P::f16>;  // q, k, v, o and the mask: fp16 (P::f16) or bf16 (mk/half.cuh)
  // Indices (docs/itypes.md): b h hk s0 q_rows kv_end D.
  static constexpr int kB = 0, kH = 1, kHk = 2, kS0 = 3, kQRows = 4, kKvEnd = 5, kD = 6;
  static constexpr int kBM = 128;
  static constexpr float kNegInf = -cuda::std::numeric_limits<float>::infinity();
  static constexpr float kLog2e = 1.4426950408889634f;
  static constexpr int kMaxStages = 6;
  static constexpr bool kTwoLoaders = MK_ATTN_TWO_LOADERS;
  static constexpr bool kSplitRelease = MK_ATTN_SPLIT_RELEASE;
  static constexpr bool kPingPong = MK_ATTN_PINGPONG == 1 || (MK_ATTN_PINGPONG == 2 && !P::causal);
  template <int D>
  static constexpr int kPolyExp2 = D == 64 ? MK_ATTN_POLY_EXP2 : MK_ATTN_POLY_EXP2_D128;
  static_assert(MK_ATTN_POLY_EXP2 >= 0 && MK_ATTN_POLY_EXP2 <= 8 && MK_ATTN_POLY_EXP2_D128 >= 0 &&
                MK_ATTN_POLY_EXP2_D128 <= 8, "MK_ATTN_POLY_EXP2(_D128): 0..8 of every 8 exponentials");
  // Semaphores: qfull, fullK[6], fullV[6] (TMA bytes), emptyK[6] and emptyV[6] (8 consumer warps; one
  // array for both without the split release), staged[2] and turn[2] (the 4 warps of a warpgroup).
  static constexpr int kQFull = 0, kFullK = 1, kFullV = kFullK + kMaxStages, kEmptyK = kFullV + kMaxStages,
                       kEmptyV = kSplitRelease ? kEmptyK + kMaxStages : kEmptyK,
                       kStaged = kEmptyV + kMaxStages, kTurn = kStaged + 2;
  static constexpr int num_semaphores = kTurn + 2;
  static __device__ int semaphore_count(int i) {
    return (i >= kEmptyK && i < kStaged) ? kConsumerWarps : i >= kStaged ? 4 : 1;
  }

  template <int D>
  struct Geo {
    static constexpr int BN = D == 64 ? 128 : P::masked ? 64 : MK_ATTN_BN_D128;
    static constexpr int kTile = BN * D * 2;  // one K or V block
    static constexpr int kPagesPerStage = 2 * kTile / kPageBytes;
    static constexpr int kStages = (kNumPages - 1) / kPagesPerStage;
    static_assert(kPagesPerStage == 1 || kPagesPerStage == 2, "a stage (K + V block) is 32 or 64 KB");
    static_assert(D == 64 || D == 128, "head dim 64 or 128");
    static __device__ __forceinline__ int k_lid(int s) { return 1 + s * kPagesPerStage; }
    static __device__ __forceinline__ int v_lid(int s) { return k_lid(s) + kPagesPerStage - 1; }
    static constexpr int kVOffset = kPagesPerStage == 1 ? kTile : 0;
    static __device__ __forceinline__ int blocks(const i32* idx) { return (idx[kKvEnd] + BN - 1) / BN; }
  };

  // ---- pages ----

  template <int D>
  static __device__ int release_order(int q, const i32* idx) {
    using G = Geo<D>;
    if (idx[kQRows] <= 0) return q;  // the loader releases every page at once
    const int nb = G::blocks(idx);
    int key[kNumPages];
    key[0] = 1 << 20;
    for (int s = 0; s < G::kStages; ++s)
      for (int p = 0; p < G::kPagesPerStage; ++p)
        key[G::k_lid(s) + p] = s < nb ? nb - 1 - (nb - 1 - s) % G::kStages : -1;  // last block of stage s
    for (int lid = 0; lid < kNumPages; ++lid) {
      int rank = 0;
      for (int j = 0; j < kNumPages; ++j) rank += key[j] < key[lid] || (key[j] == key[lid] && j < lid);
      if (rank == q) return lid;
    }
    return q;
  }
  static __device__ int lid_release_order(int q, const i32* inst) {
    const i32* idx = inst + kWIndices;
    if constexpr ((P::head_dims & 1) != 0)
      if (idx[kD] == 64) return release_order<64>(q, idx);
    if constexpr ((P::head_dims & 2) != 0)
      if (idx[kD] == 128) return release_order<128>(q, idx);
    return q;
  }

  // ---- loader ----

  // TMA of one 64x64 box: rows [s, s + 64) of head `head`, d columns [d, d + 64) of the operand of slot
  // descriptor `sd` through `map` (the calling lane's: Ctx::xmap_lane).
  template <bool BSHD>
  static __device__ __forceinline__ void load_box(const SlotDesc& sd, const TensorMap* map, unsigned char* dst, int d,
                                                  int s, int head, int b, u64* bar) {
    const int S = BSHD ? sd.dims[1] : sd.dims[2];
    if (s >= S) s = max(S - kBox, 0);  // wholly past the end: the last rows instead (see the top)
    const i32 coords[4] = {d, BSHD ? head : s, BSHD ? s : head, b};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar);
  }

  // Lane 0: `bar` expects a tile of `rows` x D.
  template <int D>
  static __device__ __forceinline__ void expect_tile(u64* bar, int rows) {
    (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               bar, static_cast<u32>(rows * D * 2));
  }
  // Warp: `rows` x D rows from row r0 into boxes (i, j) at j * rows * 128 + i * 8 KB, completing on `bar`
  // (armed by expect_tile): box k = j * (rows / 64) + i from lane first + k, all in one warp instruction
  // (gemm.cuh [Note: gemm copies per lane]: one lane issuing them in turn costs ~0.15 us a box).
  template <int D, bool BSHD>
  static __device__ __forceinline__ void load_tile(const Ctx& c, int first, const SlotDesc& sd, const TensorMap* map,
                                                   unsigned char* dst, int rows, int r0, int head, int b, u64* bar) {
    const int k = c.lane - first, ni = rows / kBox;
    if (k < 0 || k >= D / kBox * ni) return;
    const int j = k / ni, i = k % ni;
    load_box<BSHD>(sd, map, dst + j * rows * 128 + i * kBoxBytes, kBox * j, r0 + kBox * i, head, b, bar);
  }

  // Split release: V block j into stage j % kStages once V_{j - kStages} was consumed (its first use: once
  // the page is ours, unless it shares K's page). Warp-wide; false on an abort.
  template <int D, bool BSHD>
  static __device__ __forceinline__ bool load_v(Ctx& c, int j, int kv, const SlotDesc& vd, const TensorMap* vmap,
                                                int hk, int b) {
    using G = Geo<D>;
    const int s = j % G::kStages;
    bool ok = true;
    if (c.lane == 0) {
      if (j >= G::kStages)
        ok = wait_lane(c, c.sem(kEmptyV + s), static_cast<u32>((j / G::kStages - 1) & 1), 3, 210 + s);
      else if (G::kPagesPerStage == 2)
        ok = page_wait_lane(c, G::v_lid(s));
      if (ok) expect_tile<D>(c.sem(kFullV + s), G::BN);
    }
    if (!warp_ok(c, ok)) return false;
    load_tile<D, BSHD>(c, kv, vd, vmap, c.page(G::v_lid(s)) + G::kVOffset, G::BN, j * G::BN, hk, b,
                       c.sem(kFullV + s));
    return true;
  }

  template <int D>
  static __device__ void load_d(Ctx& c) {
    using G = Geo<D>;
    const i32* idx = c.idx();
    if (idx[kQRows] <= 0) {  // a rank past Sq: nothing to compute, every page passes straight on
      release_unused(c, 0);
      return;
    }
    const int nb = G::blocks(idx), used = min(nb, G::kStages);
    bool ok = true;
    if (!wait_early_inputs(c)) return;  // all but the mask, which the consumers read ([Note: attention mask])
    constexpr bool kQ = (P::bshd & 1) != 0, kK = (P::bshd & 2) != 0, kV = (P::bshd & 4) != 0;
    // Lanes [0, kv) copy a K block's boxes, [kv, 2 kv) its V block's, [0, q) the Q tile's.
    constexpr int q = D / kBox * (kBM / kBox), kv = D / kBox * (G::BN / kBox);
    const int b = idx[kB], h = idx[kH], hk = idx[kHk];
    const int qs = c.src_slot(0), ks = c.src_slot(1), vs = c.src_slot(2);
    const SlotDesc& qd = c.slot(qs);
    const SlotDesc& kd = c.slot(ks);
    const SlotDesc& vd = c.slot(vs);
    const TensorMap* qmap = c.lane < q ? c.xmap_lane(qs, kQ ? 1 : 0) : nullptr;
    const TensorMap* kmap = c.lane < kv ? c.xmap_lane(ks, kK ? 1 : 0) : nullptr;
    const TensorMap* vmap = c.lane >= kv && c.lane < 2 * kv ? c.xmap_lane(vs, kV ? 1 : 0) : nullptr;
    if (c.lane == 0) {
      ok = page_wait_lane(c, 0);
      if (ok) expect_tile<D>(c.sem(kQFull), kBM);
    }
    if (!warp_ok(c, ok)) return;
    load_tile<D, kQ>(c, 0, qd, qmap, c.page(0), kBM, idx[kS0], h, b, c.sem(kQFull));
    // Block kb's K, then (split release) V_{kb-1}: turn kb reads both, and K's half of a stage frees first.
    for (int kb = 0; kb < nb; ++kb) {
      const int s = kb % G::kStages;
      if (c.lane == 0) {
        if (kb < G::kStages) {
          ok = page_wait_lane(c, G::k_lid(s));
          if (ok && !kSplitRelease && G::kPagesPerStage == 2) ok = page_wait_lane(c, G::v_lid(s));
        } else {
          ok = wait_lane(c, c.sem(kEmptyK + s), static_cast<u32>((kb / G::kStages - 1) & 1), 3, 200 + s);
        }
        if (ok) {
          expect_tile<D>(c.sem(kFullK + s), G::BN);
          if (!kSplitRelease) expect_tile<D>(c.sem(kFullV + s), G::BN);
        }
      }
      if (!warp_ok(c, ok)) return;
      load_tile<D, kK>(c, 0, kd, kmap, c.page(G::k_lid(s)), G::BN, kb * G::BN, hk, b, c.sem(kFullK + s));
      if (!kSplitRelease)
        load_tile<D, kV>(c, kv, vd, vmap, c.page(G::v_lid(s)) + G::kVOffset, G::BN, kb * G::BN, hk, b,
                         c.sem(kFullV + s));
      else if (kb > 0 && !load_v<D, kV>(c, kb - 1, kv, vd, vmap, hk, b))
        return;
    }
    if (kSplitRelease && !load_v<D, kV>(c, nb - 1, kv, vd, vmap, hk, b)) return;
    // [Note: attention unused pages] The pages of stages no block uses pass on only now, after this
    // instruction's own loads went out: they are the previous instruction's late releases (its row of O
    // among them), and waiting for them first held every tile of fewer blocks than stages (a causal
    // tile's first rows, a 1B layer's most) behind the previous one's store. H200, 2026-12-04: the
    // consumers' head (begin -> loop start) was 4-5 us for such tiles against 1.5-2 us for the others
    // (benchmarks/notes.md Session 32).
    if (!release_unused(c, G::k_lid(used))) return;
    // Drain: as each stage's last block is consumed, free its pages.
    if (c.lane == 0)
      for (int kb = max(nb - G::kStages, 0); kb < nb && ok; ++kb) {
        const int s = kb % G::kStages;
        // emptyV: each consumer warp arrives on emptyK before emptyV for the same block.
        ok = wait_lane(c, c.sem(kEmptyV + s), static_cast<u32>((kb / G::kStages) & 1), 3, 200 + s);
        if (!ok) break;
        page_finish(c, G::k_lid(s));
        if (G::kPagesPerStage == 2) page_finish(c, G::v_lid(s));
      }
    warp_ok(c, ok);
  }

  // ---- consumers ----

  template <int N>
  static __device__ __forceinline__ void mma_ss(float (&d)[N / 2], u64 a, u64 b, int scale_d) {
    if constexpr (N == 64) ptx::wgmma_m64n64k16_ss<0, 0, P::f16>(d, a, b, scale_d);
    else ptx::wgmma_m64n128k16_ss<0, 0, P::f16>(d, a, b, scale_d);
  }
  template <int N>
  static __device__ __forceinline__ void mma_rs(float (&d)[N / 2], u32 a0, u32 a1, u32 a2, u32 a3, u64 b) {
    if constexpr (N == 64) ptx::wgmma_m64n64k16_rs<1, P::f16>(d, a0, a1, a2, a3, b, 1);
    else ptx::wgmma_m64n128k16_rs<1, P::f16>(d, a0, a1, a2, a3, b, 1);
  }

  // Each step's descriptor is the tile's plus its offset (ptx::wgmma_desc_plus): one add per wgmma instead
  // of a rebuild from the address (a dependent chain of ~4 ALU ops before every wgmma's issue in the SASS).
  // S = Q K^T (overwrites S).
  template <int D, int BN>
  static __device__ __forceinline__ void issue_s(float (&s)[BN / 2], u32 q, u32 k) {
    const u64 dq = ptx::wgmma_desc_sw128(q, 16, 1024), dk = ptx::wgmma_desc_sw128(k, 16, 1024);
#pragma unroll
    for (int t = 0; t < D / 16; ++t)
      mma_ss<BN>(s, ptx::wgmma_desc_plus(dq, (t >> 2) * 2 * kBoxBytes + 32 * (t & 3)),
                 ptx::wgmma_desc_plus(dk, (t >> 2) * BN * 128 + 32 * (t & 3)), t > 0 ? 1 : 0);
  }
  // O += P V.
  template <int D, int BN>
  static __device__ __forceinline__ void issue_pv(float (&o)[D / 2], const u32 (&p)[BN / 4], u32 v) {
    const u64 dv = ptx::wgmma_desc_sw128(v, BN * 128, 1024);
#pragma unroll
    for (int t = 0; t < BN / 16; ++t)
      mma_rs<D>(o, p[4 * t], p[4 * t + 1], p[4 * t + 2], p[4 * t + 3], ptx::wgmma_desc_plus(dv, 2048 * t));
  }

  template <int N>
  static __device__ __forceinline__ void fence_all(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) ptx::fence_operand(r[i]);
  }
  template <int N>
  static __device__ __forceinline__ void fence_all(u32 (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) ptx::fence_operand(r[i]);
  }

  static __device__ __forceinline__ u32 pack_half(float lo, float hi) { return pack2_bits<P::f16>(lo, hi); }

  // Online softmax of one block (keys j0..j0+BN-1) for this thread's rows `row` and `row + 8`: mask,
  // running max m (scaled by scale * log2 e), P = 2^(s * scale_log2 - m) in place, l = l * corr + sum P.
  // kPoly: of every 8 exponentials, this many by ex2_poly ([Note: attention poly exp2]).
  template <int BN, bool kFirst, int kPoly>
  static __device__ __forceinline__ void softmax(float (&s)[BN / 2], float (&m)[2], float (&l)[2], float (&corr)[2],
                                                 int j0, int row, int kv_end, bool mask, int lane,
                                                 const u32 (&mk)[BN / 4]) {
    if constexpr (P::masked) {  // t = s * scale + mask, natural units ([Note: attention mask])
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) {
        const u32 w = mk[2 * (i >> 2) + ((i >> 1) & 1)];
        float mv = (i & 1) ? H::hi(w) : H::lo(w);
        if constexpr (P::f16) mv = mv == -65504.f ? -3.38953139e38f : mv;  // [Note: fp16 mask lowest]
        s[i] = fmaf(s[i], P::scale, mv);
      }
    }
    if (mask) {
#pragma unroll
      for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + 8 * i + 2 * (lane & 3) + (e & 1), r = row + 8 * (e >> 1);
          if (j >= kv_end || (P::causal && j > r)) s[4 * i + e] = kNegInf;
        }
    }
    // [Note: softmax chains] The row max and sum run as kChains independent chains per row half, joined at
    // the end: one chain of BN / 4 dependent FMNMX / FADD per half left the warp stalled on each one's
    // latency (ncu on the H200, (16, 16, 2048, 128) full: 'wait' held ~45% of the softmax's samples). With
    // 4 chains the softmax took 9% fewer of the loop's cycles, but the loop and the TFLOP/s did not move
    // (1, 4 and 8 chains within noise, 2026-12-03): the softmax is not what sets the turn's length.
    constexpr int kChains = MK_ATTN_SOFTMAX_CHAINS;
    static_assert(kChains == 1 || kChains == 2 || kChains == 4 || kChains == 8,
                  "MK_ATTN_SOFTMAX_CHAINS: 1, 2, 4 or 8");
    float mx[2][kChains], sum[2][kChains];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int k = 0; k < kChains; ++k) mx[h][k] = kNegInf, sum[h][k] = 0.f;
    // s[4 j + e]: row half e / 2 (fragment of wgmma's m64nN accumulator), chain j % kChains.
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      float& x = mx[(i >> 1) & 1][(i >> 2) % kChains];
      x = fmaxf(x, s[i]);
    }
    float mn[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int w = kChains / 2; w > 0; w /= 2)
#pragma unroll
        for (int k = 0; k < w; ++k) mx[h][k] = fmaxf(mx[h][k], mx[h][k + w]);
      float x = mx[h][0];
      x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
      x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
      if constexpr (P::masked) {
        // The max of a row whose keys are all -inf so far is -inf: subtract 0 instead (P = 0, corr = 0).
        const float top = kFirst ? x : fmaxf(m[h], x);
        mn[h] = top == kNegInf ? 0.f : top;
        corr[h] = kFirst ? 1.f : ptx::ex2((m[h] - mn[h]) * kLog2e);
        m[h] = top;
      } else {
        mn[h] = kFirst ? x * P::scale_log2 : fmaxf(m[h], x * P::scale_log2);
        corr[h] = kFirst ? 1.f : ptx::ex2(m[h] - mn[h]);
        m[h] = mn[h];
      }
    }
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      const float x = P::masked ? (s[i] - mn[(i >> 1) & 1]) * kLog2e : fmaf(s[i], P::scale_log2, -mn[(i >> 1) & 1]);
      s[i] = i % 8 < kPoly ? ex2_poly(x) : ptx::ex2(x);
      sum[(i >> 1) & 1][(i >> 2) % kChains] += s[i];
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int w = kChains / 2; w > 0; w /= 2)
#pragma unroll
        for (int k = 0; k < w; ++k) sum[h][k] += sum[h][k + w];
      l[h] = kFirst ? sum[h][0] : l[h] * corr[h] + sum[h][0];
    }
  }

  // [Note: attention overlap] ptxas schedules `wgmma.wait_group 0` (WARPGROUP.DEPBAR) as early as its
  // basic block allows: with the softmax and the wait in one block it hoisted the wait above the whole
  // softmax (nvdisasm, 2026-12-03), so the softmax ran after the P V wgmma instead of under it (ncu on the
  // H200, (16, 16, 2048, 128) full: 11.6% of the consumers' loop samples on that wait). A branch on the
  // softmax's result ends the block: the wait cannot move above it. The condition never holds (l is a
  // sum of exponentials, >= 0 or NaN), so it costs one add, one compare and one untaken branch.
  static __device__ __forceinline__ void end_softmax_block(const float (&l)[2]) {
    if (MK_ATTN_SPLIT_SOFTMAX && l[0] + l[1] < 0.f) __trap();
  }

  // A block needs the mask when it reaches past kv_end or (causal) past the warpgroup's first row.
  template <int BN>
  static __device__ __forceinline__ bool needs_mask(int j0, int kv_end, int first_row) {
    return j0 + BN > kv_end || (P::causal && j0 + BN - 1 > first_row);
  }

  // O *= corr (per row half), before O += P V of the block whose softmax produced corr.
  template <int D>
  static __device__ __forceinline__ void rescale_o(float (&o)[D / 2], const float (&corr)[2]) {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] *= corr[(i >> 1) & 1];
  }

  // [Note: attention wait stats]: cycles since the last lap, per part of the loop.
  struct Laps {
    // kKvHead: the K / V waits of turns < kStages (the stages' first fill), kKv those of the later turns.
    enum { kKv, kKvHead, kTurn, kIssue, kSWait, kSoftmax, kPvWait, kRest, kParts };  // kRest: not reported
    long long t = 0, begin = 0;
    u64 v[kParts] = {};
    __device__ __forceinline__ void start(const Ctx& c) {
      if constexpr (MK_ATTN_WAIT_STATS) {
        if (c.warp == 0) mark(c, kEvFirstFull);  // the loop's begin and end in time too: the SM clock
        begin = t = clock64();
      }
    }
    __device__ __forceinline__ void lap(int k) {
      if constexpr (MK_ATTN_WAIT_STATS) {
        const long long n = clock64();
        v[k] += static_cast<u64>(n - t);
        t = n;
      }
    }
    __device__ __forceinline__ void report(const Ctx& c) const {
      if (!MK_ATTN_WAIT_STATS || c.warp != 0) return;
      mark(c, kEvMainloopCycles, static_cast<u64>(clock64() - begin));
      mark(c, kEvMainloopEnd);
      mark(c, kEvFullWaitCycles, v[kKv]);
      mark(c, kEvEmptyWaitCycles, v[kKvHead]);
      mark(c, kEvAttnTurnWait, v[kTurn]);
      mark(c, kEvAttnIssue, v[kIssue]);
      mark(c, kEvAttnSWait, v[kSWait]);
      mark(c, kEvAttnSoftmax, v[kSoftmax]);
      mark(c, kEvAttnPvWait, v[kPvWait]);
    }
  };

  // Ping-pong: wait for this warpgroup's turn t / hand the next turn to the other warpgroup.
  static __device__ __forceinline__ bool my_turn(Ctx& c, int wg, int t) {
    if (!kPingPong) return true;
    return mma_wait(c, c.sem(kTurn + wg), static_cast<u32>(t & 1), kTurn + wg);
  }
  static __device__ __forceinline__ void pass_turn(const Ctx& c, int wg) {
    if (!kPingPong) return;
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kTurn + (wg ^ 1)));
  }
  // Hand back K's half of stage s (split release; S has landed) / V's (or the whole stage without it).
  static __device__ __forceinline__ void release_k(const Ctx& c, int s) {
    if (!kSplitRelease) return;
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kEmptyK + s));
  }
  static __device__ __forceinline__ void release_v(const Ctx& c, int s) {
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kEmptyV + s));
  }

  // [Note: attention mask] this thread's two mask rows (row, row + 8; rows past Sq read the last one, never
  // stored) of (b, h), and whether a column pair is one aligned 4-byte load.
  struct MaskRows {
    const unsigned short* r[2];
    bool pairs;
  };
  static __device__ __forceinline__ MaskRows mask_rows(const Ctx& c, int row) {
    MaskRows mr{{nullptr, nullptr}, false};
    if constexpr (P::masked) {
      const SlotDesc& sd = c.slot(c.src_slot(3));
      const i32* idx = c.idx();
      const long long bm = sd.dims[0] > 1 ? idx[kB] : 0, hm = sd.dims[1] > 1 ? idx[kH] : 0;
      const unsigned short* base = reinterpret_cast<const unsigned short*>(sd.ptr);
      for (int h = 0; h < 2; ++h) {
        const long long r = sd.dims[2] > 1 ? min(row + 8 * h, sd.dims[2] - 1) : 0;
        mr.r[h] = base + ((bm * sd.dims[1] + hm) * sd.dims[2] + r) * sd.dims[3];
      }
      mr.pairs = sd.dims[3] % 2 == 0 && (sd.ptr & 3) == 0;
    }
    return mr;
  }
  // The mask entries of block j0's S fragment: mk[2 i + h] = columns j, j + 1 (j = j0 + 8 i + 2 (lane % 4))
  // of row half h as 16-bit pairs; 0 past kv_end (those columns are masked to -inf anyway).
  template <int BN>
  static __device__ __forceinline__ void load_mask(u32 (&mk)[BN / 4], const MaskRows& mr, int j0, int kv_end, int lane) {
    if constexpr (P::masked) {
#pragma unroll
      for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int j = j0 + 8 * i + 2 * (lane & 3);
          u32 v = 0;
          if (j < kv_end) {
            if (mr.pairs) {
              v = *reinterpret_cast<const u32*>(mr.r[h] + j);
            } else {
              v = mr.r[h][j];
              if (j + 1 < kv_end) v |= static_cast<u32>(mr.r[h][j + 1]) << 16;
            }
          }
          mk[2 * i + h] = v;
        }
    }
  }

  template <int D>
  static __device__ void compute_d(Ctx& c) {
    using G = Geo<D>;
    constexpr int BN = G::BN;
    const i32* idx = c.idx();
    if (idx[kQRows] <= 0) return;
    const int wg = c.warp >> 2, nb = G::blocks(idx), kv_end = idx[kKvEnd];
    const int first_row = idx[kS0] + 64 * wg;                             // the warpgroup's first row
    const int row = first_row + 16 * (c.warp & 3) + (c.lane >> 2);       // this thread's rows: row, row + 8
    const u32 q = ptx::smem_addr(c.page(0)) + wg * kBoxBytes;

    float o[D / 2], s[BN / 2], m[2], l[2], corr[2];
    u32 p[BN / 4], mk[BN / 4];  // mk: unused unless masked
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    const MaskRows mr = mask_rows(c, row);
    if constexpr (P::masked) {
      if (!wait_late_inputs(c)) return;
    }
    load_mask<BN>(mk, mr, 0, kv_end, c.lane);

    if (!mma_wait(c, c.sem(kQFull), 0, kQFull)) return;
    if (wg == 1) pass_turn(c, wg);  // warpgroup 0 issues first

    // Turn 0: S_0 = Q K_0^T.
    if (!mma_wait(c, c.sem(kFullK), 0, kFullK) || !my_turn(c, wg, 0)) return;
    fence_all(s);
    ptx::wgmma_fence();
    issue_s<D, BN>(s, q, ptx::smem_addr(c.page(G::k_lid(0))));
    ptx::wgmma_commit();
    pass_turn(c, wg);
    ptx::wgmma_wait<0>();
    fence_all(s);
    release_k(c, 0);
    softmax<BN, true, kPolyExp2<D>>(s, m, l, corr, 0, row, kv_end, needs_mask<BN>(0, kv_end, first_row), c.lane, mk);
#pragma unroll
    for (int i = 0; i < BN / 4; ++i) p[i] = pack_half(s[2 * i], s[2 * i + 1]);

    // Turn kb: S_kb = Q K_kb^T and O += P_{kb-1} V_{kb-1}; the softmax of S_kb overlaps the P V wgmma.
    Laps laps;
    laps.start(c);
    for (int kb = 1; kb < nb; ++kb) {
      const int sk = kb % G::kStages, sv = (kb - 1) % G::kStages;
      load_mask<BN>(mk, mr, kb * BN, kv_end, c.lane);
      if (!mma_wait(c, c.sem(kFullK + sk), static_cast<u32>((kb / G::kStages) & 1), kFullK + sk) ||
          !mma_wait(c, c.sem(kFullV + sv), static_cast<u32>(((kb - 1) / G::kStages) & 1), kFullV + sv))
        return;
      if (kb < G::kStages)  // constant indices: a computed one puts the laps in local memory
        laps.lap(Laps::kKvHead);
      else
        laps.lap(Laps::kKv);
      if (!my_turn(c, wg, kb)) return;
      laps.lap(Laps::kTurn);
      fence_all(s);
      fence_all(o);
      fence_all(p);
      ptx::wgmma_fence();
      issue_s<D, BN>(s, q, ptx::smem_addr(c.page(G::k_lid(sk))));
      ptx::wgmma_commit();
      rescale_o<D>(o, corr);  // the previous block's correction, while S_kb runs
      fence_all(o);
      ptx::wgmma_fence();     // O was written since the last fence
      issue_pv<D, BN>(o, p, ptx::smem_addr(c.page(G::v_lid(sv)) + G::kVOffset));
      ptx::wgmma_commit();
      pass_turn(c, wg);
      laps.lap(Laps::kIssue);
      ptx::wgmma_wait<1>();  // S_kb has landed; P V may still run
      fence_all(s);
      laps.lap(Laps::kSWait);
      release_k(c, sk);
      softmax<BN, false, kPolyExp2<D>>(s, m, l, corr, kb * BN, row, kv_end,
                                       needs_mask<BN>(kb * BN, kv_end, first_row), c.lane, mk);
      end_softmax_block(l);
      laps.lap(Laps::kSoftmax);
      ptx::wgmma_wait<0>();
      fence_all(o);
      fence_all(p);
      laps.lap(Laps::kPvWait);
      release_v(c, sv);  // V_{kb-1} was read now (and K_{kb-1} in the previous turn)
#pragma unroll
      for (int i = 0; i < BN / 4; ++i) p[i] = pack_half(s[2 * i], s[2 * i + 1]);
      laps.lap(Laps::kRest);
    }
    if (nb > 1) laps.report(c);  // one block: no loop (and no row for timeline.py's Gemm statistics)

    // Last turn: O += P_{nb-1} V_{nb-1}.
    {
      const int sv = (nb - 1) % G::kStages;
      if (!mma_wait(c, c.sem(kFullV + sv), static_cast<u32>(((nb - 1) / G::kStages) & 1), kFullV + sv) ||
          !my_turn(c, wg, nb))
        return;
      rescale_o<D>(o, corr);
      fence_all(o);
      fence_all(p);
      ptx::wgmma_fence();
      issue_pv<D, BN>(o, p, ptx::smem_addr(c.page(G::v_lid(sv)) + G::kVOffset));
      ptx::wgmma_commit();
      pass_turn(c, wg);
      ptx::wgmma_wait<0>();
      fence_all(o);
      release_v(c, sv);
    }

    // Epilogue: O / l in 16 bits into this warpgroup's Q boxes (its last S wgmma has read them).
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
      inv[h] = P::masked && l[h] == 0.f ? 0.f : 1.f / l[h];  // masked: a row with no key left is 0
    }
    unsigned char* out = c.page(0) + wg * kBoxBytes;
    const int r0 = 16 * (c.warp & 3) + (c.lane >> 2);
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<u32*>(swizzled_pair(out + (i >> 3) * 2 * kBoxBytes, r0 + 8 * h, i & 7, c.lane & 3)) =
            pack_half(o[4 * i + 2 * h] * inv[h], o[4 * i + 2 * h + 1] * inv[h]);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the TMA store reads this page
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kStaged + wg));
  }

  // ---- storer ----

  template <int D>
  static __device__ void store_d(Ctx& c) {
    const i32* idx = c.idx();
    const int q_rows = idx[kQRows];
    if (q_rows > 0) {
      if (!wait_reuse(c)) return;
      // bshd bit 3: o is (B, S, H, D), stored through the slot's strided map (coordinates d, h, s, b).
      constexpr bool kOBshd = (P::bshd & 8) != 0;
      const TensorMap* omap = c.xmap(c.dst_slot(0), kOBshd ? 1 : 0);
      for (int wg = 0; wg < 2; ++wg) {
        if (!wait(c, c.sem(kStaged + wg), 0)) return;
        if (c.lane == 0 && kBox * wg < q_rows) {
          for (int j = 0; j < D / kBox; ++j) {
            const int s = idx[kS0] + kBox * wg;
            const i32 coords[4] = {kBox * j, kOBshd ? idx[kH] : s, kOBshd ? s : idx[kH], idx[kB]};
            cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, omap, coords,
                                            c.page(0) + j * 2 * kBoxBytes + wg * kBoxBytes);
          }
          cuda::ptx::cp_async_bulk_commit_group();
        }
      }
      if (c.lane == 0) {
        cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
        page_finish(c, 0);
      }
      __syncwarp();
    }
    store_done(c);
  }

  // ---- dispatch on the head dim (indices word 6) ----

  template <template <int> class F>
  static __device__ __forceinline__ void by_head_dim(Ctx& c) {
    const int D = c.idx()[kD];
    if constexpr ((P::head_dims & 1) != 0)
      if (D == 64) return F<64>::run(c);
    if constexpr ((P::head_dims & 2) != 0)
      if (D == 128) return F<128>::run(c);
  }
  template <int D> struct Load { static __device__ __forceinline__ void run(Ctx& c) { load_d<D>(c); } };
  template <int D> struct Compute { static __device__ __forceinline__ void run(Ctx& c) { compute_d<D>(c); } };
  template <int D> struct Store { static __device__ __forceinline__ void run(Ctx& c) { store_d<D>(c); } };

  static __device__ void load(Ctx& c) { by_head_dim<Load>(c); }
  static __device__ void compute(Ctx& c) { by_head_dim<Compute>(c); }
  static __device__ void store(Ctx& c) { by_head_dim<Store>(c); }
};

}  // namespace mk
