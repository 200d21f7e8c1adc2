// Gemm: D = A @ B, bf16 (F16: fp16) in, fp32 accumulate in registers, the same type out (DESIGN §7, hopper-notes §2.1,
// docs/itypes.md). One instruction = one 128x256 tile of D (rows [m, m + m_rows), columns
// [n0, n0 + n_cols)), all of K in 64-wide k-tiles; a tile of at most 128 columns (Profile::gemm_n_narrow
// when 256-wide tiles would leave SMs idle, or a ragged last tile) runs m64n128k16 instead.
//
// Roles.
// - Loader (warp 9; warp 11 on odd iterations, [Note: two loaders]): TMA k-tiles into a 4-stage ring;
//   stage s = A 128x64 (16 KB, two 64x64 boxes) + B 64x256 (32 KB, four 64x64 boxes), full[s] (TMA
//   bytes) / empty[s] (8 consumer warps). Lane 0 waits for a stage and arms full[s], a lane per copy
//   issues it ([Note: gemm copies per lane]); an operand's boxes go in one copy where its slot has the
//   wide maps ([Note: gemm wide boxes]). Once every k-tile is issued it moves on to its next
//   instruction's loads; the other loader warp meanwhile sets up the next Gemm.
// - Consumers (warps 0-7): warpgroup wg owns rows 64wg..64wg+63 x 256 columns = 128 fp32 registers
//   per thread; per k-tile four m64n256k16 wgmma (A and B from shared memory, 128-byte swizzle), the
//   stage handed back once they completed (wait_group 0; MK_GEMM_EARLY_RELEASE in vm.cuh: the other
//   warpgroup's wgmma keep the tensor core busy meanwhile). Epilogue: bf16 into a
//   page in the TMA store layout (64x64 boxes, 128-byte swizzle), proxy fence, staged[wg].
// - Storer (warp 10): drain (frees each stage's pages once its last k-tile is consumed: the next
//   instruction's first loads land there during this one's tail), reuse barriers, TMA-stores the
//   staged boxes (clipped by TMA at the tensor's edges), frees each epilogue page once its stores have
//   read it ([Note: gemm epilogue page order]), then store_done (global barrier arrive after the writes
//   complete).
//
// [Note: gemm pages] lid 0 = A of stages 0 and 1, lids 1, 2 = B of stages 0, 1, lid 3 = A of stages
// 2 and 3, lids 4, 5 = B of stages 2, 3, lid 6 = epilogue of warpgroup 0. Warpgroup 1 stages its
// epilogue in the B page of the last k-tile's stage, once both warpgroups' last wgmma have read it
// (empty[last] completes). Release order (lid_release_order): unused stage pages, then the stage
// pages in the order their last k-tile drains, the epilogue pages last; so the next instruction's
// first loads land in the pages that free up first, while this one is still in its epilogue.
//
// [Note: wgmma descriptors] (PTX "matrix descriptor"; layout type 1 = 128-byte swizzle; units of 16 B
// below are written in bytes). TMA with CU_TENSOR_MAP_SWIZZLE_128B writes a 64-column bf16 box as
// rows of 128 B, row r at r*128, its 16-byte chunk j at chunk j ^ (r % 8); every box starts 1024-byte
// aligned, so the pattern matches the wgmma swizzle atom (8 rows x 128 B = 1024 B) with base offset 0.
// - A (K-major: the (M, K) tile is row-major, K contiguous): a core-matrix group is 8 rows x 128 B,
//   consecutive 8-row groups (along M) are 1024 B apart, so SBO = 1024; LBO is unused for swizzled
//   K-major layouts (set to 16). The k16 step s of the 64-wide k-tile starts 16 elements = 32 B further
//   into the 128-byte row: start + 32 s (the hardware applies the XOR swizzle to the final address,
//   as TMA did when writing).
// - B (N-major: the (K, N) tile is row-major, N contiguous; instruction bit imm-trans-b = 1): the
//   canonical MN-major SW128 layout is ((8 x 16 B along N, n blocks), (8 rows along K, k groups)) with
//   strides ((16 B, LBO), (128 B, SBO)). One 64x64 box holds 64 N-columns (one 128-byte row) for the
//   64 k rows of the tile: the next 64 N-columns (next box) are 8192 B away -> LBO = 8192; the next 8
//   k rows are 8 x 128 B = 1024 B away -> SBO = 1024. The k16 step s starts 16 rows further: +2048 s.
//   (CuTe's make_gmma_desc<Major::MN> and ThunderKittens' transposed descriptor use the same values.)
//
// Flags (docs/itypes.md "Gemm"; template parameters, chosen by src/runtime/codegen.cpp):
// - TA (`ta`): A's backing holds A^T row-major, (K, M). The loader's 64x64 boxes run 64 M-columns x 64
//   K-rows (box h = M [64h, 64h + 64), the rows of warpgroup h), so the smem A tile is M-major, the same
//   shape as the plain B tile: descriptor LBO = 8192 (unused: m64 is one 128-byte row), SBO = 1024,
//   k16 step +2048; instruction bit imm-trans-a = 1.
// - TB (`tb`): B's backing holds B^T row-major, (N, K) (nn.Linear's weight). Boxes run 64 K-columns x
//   64 N-rows, box j = N [64j, 64j + 64); the four boxes are contiguous, so the smem B tile is 256
//   K-major rows of 128 B: the descriptor is A's (SBO = 1024, k16 step +32 B), imm-trans-b = 0.
// - BIAS (1 `bias_row`, 2 and 3 `bias_full`: [Note: gemm bias tile]), added in fp32 to each column
//   pair right before it is rounded and staged, so its accumulator registers die as the bias is needed
//   (initialising the accumulator with the bias before the k-loop spilled, or serialized the wgmma).
//   The bias is a late input (docs/instruction.md): the loader does not wait for it (the mainloop of a
//   split-K chain's next split runs while the split it adds is still computing).
//   bias_row: the consumers read the row from global memory (ld.global.cg: L2, never a stale L1 line)
//   at word 15's element offset, after waiting for its barrier themselves (the loader's waits do not
//   order their generic loads), addresses clamped into the n_cols of the tile.
//   bias_full: [Note: gemm bias tile].
//
// [Note: gemm bias tile] A bias_full tile is as large as D's (64 KB for 128 x 256): read by the
// consumers' own loads, 2 bytes per pair element, 8 rows per warp instruction, its L2 / HBM round trips
// took 12.8 us of a 16.5 us epilogue in the 8B Llama's o and down projections (timeline, H200,
// 2026-12-03). Instead the storer, idle during the mainloop, waits for the bias's barrier and
// TMA-loads each warpgroup's 64 rows into the page that warpgroup stages its epilogue in, in D's own
// 64x64 swizzled boxes (the bias slot's xmap, src/runtime/codegen.cpp): warpgroup 0's half into the
// epilogue page (at the instruction's start when the bias is there already, as a residual is; a split-K
// piece's bias once all but the last k-tile are consumed), warpgroup 1's into the last stage's B page
// once both warpgroups' last wgmma read it (the drain's last wait); bias[wg] (TMA bytes) tells the
// consumers.
// A thread then reads its bias pair from the very address it writes its result to. The coordinates
// come from word 15's element offset, split along the backing's padded dims. TMA needs the box's first
// column 16-byte aligned: a bias view starting off that (a sliced view) is read as bias_row is, with
// the consumers' own loads (bias_tile). BIAS 3 has both paths, chosen per instruction; codegen emits
// BIAS 2, the staged tile alone, when every instruction of the icode is aligned (src/runtime/codegen.cpp
// gemm_bias_tiles): the other path's address arithmetic and loads, predicated off in the same unrolled
// loop, still took issue slots, ~1.2 us of a 128 x 256 tile's epilogue (with the path compiled out:
// 4096^3 x 3 with bias 622 -> 614 us, the 8B o projection + residual 115.1 -> 113.2 us; H200,
// 2026-12-04, benchmarks/notes.md Session 30).
// - SWIGLU (`swiglu`): D = silu(A @ B) * (A @ B2), a tile of at most 128 output columns. Boxes 0, 1 of
//   the B stage hold B's columns [n0, n0 + 128), boxes 2, 3 the same columns of B2 (its tensor map, B's
//   coordinates: the host requires both views to sit alike on their backings), so one m64n256k16 puts
//   B's column j in accumulator column j and B2's in j + 128: the same thread, register 64 further. The
//   epilogue computes silu(g) * u in fp32 and rounds once.
// - ACT (`act=relu`, `gelu`, ...): the activation of the ElementwiseUnary the tracer folded in
//   (src/trace/fuse_gemm_act.h), applied in fp32 after the bias, before the one rounding (relu after it,
//   on the rounded pair: numerically the same values).
// - ROPE (`rope=D`, D 64 or 128): the rotate_half rotary embedding of the Rope the tracer folded in
//   (src/trace/fuse_gemm_rope.h), in fp32 after the bias: [Note: gemm rope epilogue].
// - RMS_IN (`rms_in=<eps>`): an RMSNorm folded into this Gemm, its reader (src/trace/fuse_rms_norm_gemm.h):
//   [Note: gemm rms_in].
//
// [Note: gemm rope epilogue] A tile's columns start on a head and hold whole heads (the host checks
// the tile widths), so column n's rotate_half partner n -+ D/2 sits in the same thread: the accumulator
// pair D/16 register groups (of 4) away. cos / sin (sources 2, 3, after a bias_row) are whole bf16
// tables of T rows of D; row m of D reads table row m % T, column n % D, as 4-byte bf16 pairs through
// L2 (ld.global.cg, like bias_row: the tables are late inputs, written earlier in the same launch).
// Measured (HF 8B shape, D = 128, H200 2026-12-03, benchmarks/notes.md Session 21): a q tile's
// consumer time 52.7 -> 60.6 us (median): the D/16 serial batches of table loads cost ~1 us each. With
// Attention then reading q / k as (B, S, H, D) (38% more SM time) the kernel was 6.765 ms against 6.683
// with the Rope kept. With the tables staged as below (same call, H200 2026-12-03, Session 22): HF 1B
// (D 64, seq 1024) 5.234 ms fused vs 5.349 kept; HF 8B (D 128, seq 2048) 6.907 vs 6.711. So the tracer
// folds D = 64 only by default (src/trace/fuse_gemm_rope.h).
// [Note: gemm rope tables] Where a warpgroup's (at most) 64 rows lie in one run of the tables' rows, the
// storer TMA-loads their cos and sin rows (64 x D each, through the tables' xmaps) into the page the
// warpgroup stages its epilogue in, as a bias_full tile: warpgroup 0's at the instruction's start,
// warpgroup 1's once the last k-tile is read. cos goes in boxes [0, D/64), sin in [D/64, D/32): at the
// places of output columns [0, D) and [D, 2D). Rows that wrap at T or cross a batch of a (B, S, D) table
// read through L2 as above.
// Every operand is TMA'd from its own backing: 64x64 boxes, or the same boxes several per copy through
// the slot's wide maps ([Note: gemm wide boxes]); the shared-memory layout is the same either way.
//
// [Note: gemm multicast] The two ranks of a cluster tile (consecutive instructions, run by the two CTAs
// of a cluster at the same iteration: src/schedule/phase1_place.cpp) compute rows m0 and m0 + 128 of the
// same columns, so they read the same B panel, and their stage pages coincide (rank 1 takes rank 0's
// page renaming: kernels/mk/interpreter.cuh [Note: cluster page renaming]). When both have rows (word
// 12, bit 16), each loader TMA-multicasts the B boxes of its parity (box j from rank j % 2) into both
// CTAs at the same offsets: per k-tile a CTA reads 32 KB from L2 instead of 48 (the mainloop is
// L2-bandwidth bound, benchmarks/notes.md).
// - full[s] expects A plus every B box (some land from the peer's TMA, possibly before expect_tx:
//   the tx-count may dip below zero within a phase).
// - empty[s] counts 16 arrivals under clusters: each consumer warp arrives on both CTAs' copy when
//   multicasting, twice on its own otherwise; so a loader reuses stage s only once both CTAs consumed
//   it, and the storer's drain (which waits on every last phase) keeps the instruction, hence its
//   semaphores, alive until the peer's last remote arrival.
// - ready[s] (one remote arrival from the peer's loader): the peer's page for stage s is free, before
//   the first write of stage s into it (the page waits are per CTA).
// Word 12 carries m_rows in its low 16 bits and, in bit 16, whether the other rank has rows too.
// Off unless MK_GEMM_MULTICAST=1 (MEGAKITTENS_DEFINES; kernels/mk/vm.cuh says why).
//
// Edges: TMA zero-fills reads outside the backing tensor and clips stores at its edges. Boxes wholly
// past m_rows / n_cols are not loaded (their accumulator rows/columns are never stored). A K that is
// not a multiple of 64 reads zeros past K when the view ends at the backing's edge; when it does not
// (a sliced view), the loader zeroes the tail of the last k-tile in shared memory before the consumers
// use it (fixed semaphore). D is always a whole tensor (the Gemm's own output), so its tiles end at
// the tensor's edges and TMA clipping is exact.
#pragma once
#include "mk/tile.cuh"
#include "mk/unary.cuh"

#ifndef MK_GEMM_BIAS_EARLY  // 1: [Note: gemm early bias] (an experiment, off by default)
#define MK_GEMM_BIAS_EARLY 0
#endif
// [Note: gemm wide boxes] 1 (default): an operand's boxes in one copy where the slot has the wide maps;
// 0: 64x64 boxes only.
#ifndef MK_GEMM_WIDE_BOXES
#define MK_GEMM_WIDE_BOXES 1
#endif
// [Note: gemm wait stats] MK_GEMM_WAIT_STATS=1 (timeline only; an experiment): consumer warp 0 counts the
// SM cycles of its mainloop (k-tile 0 landed -> the last wait) and the part of them spent waiting for a
// full stage (k-tiles 1..), the loader's lane 0 those spent waiting for an empty stage; benchmarks/
// timeline.py prints the fractions: which side of the ring waits for the other.
// [Note: gemm turn stats] With it also (kernels/mk/vm.cuh kEvGemm*): consumer 0's full-stage waits over
// k-tiles 1-3 alone, when the storer's drain of instruction i has freed the two pages i's successor takes
// for its k-tile 0 (i's first two in lid_release_order: freed at k-tiles nk - 4 and nk - 3), and when that
// successor's loader has them; timeline.py's `turn` line reads the hand-over between consecutive tiles
// (Session 30: k-tile 0 of the next tile went out ~0.8 us after the mainloop's end, not ~1.4 us before;
// Session 31, gemm4k: the drain frees the pages only 0.34 us before the end, the loader has them 0.13 us
// later, and the copy's issue then waits 1.28 us behind the SM's copies in flight).
#ifndef MK_GEMM_WAIT_STATS
#define MK_GEMM_WAIT_STATS 0
#endif
// Experiments (benchmarks/notes.md Session 16), timing only, results wrong: MK_EXP_GEMM_NO_LOAD: the
// loader arms each stage without copying (the consumers multiply stale shared memory); MK_EXP_GEMM_NO_MMA:
// the consumers wait for and release each stage without multiplying.

namespace mk {

#ifdef MK_EXP_GEMM_NO_LOAD
constexpr bool kExpNoLoad = true;
#else
constexpr bool kExpNoLoad = false;
#endif

// TA / TB: transposed A / B backing (flags `ta` / `tb`); BIAS: 0 none, 1 bias_row, 2 bias_full (every
// tile staged), 3 bias_full (staged or read through L2, per instruction: [Note: gemm bias tile]);
// SWIGLU: flag `swiglu` (B2 is source 2); ACT: flag `act=<op>`, applied after the bias; ROPE: flag
// `rope=D` ([Note: gemm rope epilogue]); RMS_IN: flag `rms_in` ([Note: gemm rms_in]), whose eps is a constant of the
// icode, RMS_EPS (its float's bits).
template <bool TA = false, bool TB = false, int BIAS = 0, bool SWIGLU = false, Unary ACT = Unary::identity,
          int ROPE = 0, bool RMS_IN = false, bool F16 = false, int RMS_EPS = 0>
struct GemmT {
  using H = Half<F16>;  // the operands' 16-bit float (flag `f16`: fp16, else bf16; mk/half.cuh)
  static constexpr bool kRmsIn = RMS_IN;  // [Note: gemm rms_in]
  static_assert(!kRmsIn || (!TA && !F16), "rms_in: a row-major bf16 A (src/itypes/gemm.cpp validate_rms_in)");
  static_assert(ROPE == 0 || ROPE == 64 || ROPE == 128, "ROPE: 0 none, else the head dim 64 or 128");
  static constexpr bool kFullBias = BIAS >= 2;
  static_assert(ROPE == 0 || (!SWIGLU && !kFullBias && ACT == Unary::identity), "rope goes with bias_row at most");
  static_assert(BIAS >= 0 && BIAS <= 3, "BIAS: 0 none, 1 row, 2 full (staged), 3 full (staged or through L2)");
  static_assert(!(SWIGLU && BIAS), "the swiglu Gemm has no bias");
  static_assert(!(SWIGLU && ACT != Unary::identity), "the swiglu Gemm has no activation");
  static_assert(!kUnaryHasK<ACT>, "an activation without a constant");
  static constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4;
  static constexpr int kEpiLid = 6;
  static constexpr bool kTwoLoaders = true;  // [Note: two loaders] (kernels/mk/vm.cuh)
  // Indices (docs/itypes.md): A.b A.d A.r A.c | B.b B.d B.r B.c | D.b D.d D.r D.c | m_rows(+pair) n_cols K
  // [| C.off] (word 15, bias flags only: the bias origin as one element offset into its backing).
  static constexpr int kA = 0, kB = 4, kD = 8, kMRows = 12, kNCols = 13, kK = 14, kBiasOff = 15;
  static constexpr int kRopeSrc = BIAS != 0 ? 3 : 2;  // sources of the cos and sin tables: kRopeSrc, + 1
  // [Note: gemm rms_in] the norm's weight (source): after the bias or B2 and the rope tables.
  static constexpr int kRmsWSrc = (BIAS != 0 || SWIGLU ? 3 : 2) + (ROPE != 0 ? 2 : 0);
  // Semaphores: full[4] (TMA bytes), empty[4] (8 consumer warps), fixed (K tail zeroed), staged[2]
  // (the 4 warps of a warpgroup wrote their epilogue), issued (the loader issued every k-tile).
  // ready[4] (the peer's stage page is free, [Note: gemm multicast]), bias[2] (bias_full: the warpgroup's
  // bias rows landed in its epilogue page, TMA bytes; [Note: gemm bias tile]; rope: its table rows,
  // [Note: gemm rope tables]).
  static constexpr int kFull = 0, kEmpty = 4, kFixed = 8, kStaged = 9, kIssued = 11, kReady = 12, kBias = 16;
  static constexpr int num_semaphores = kFullBias || ROPE != 0 ? 18 : 16;
  static __device__ int semaphore_count(int i) {
    return (i >= kEmpty && i < kFixed) ? kConsumerWarps * kClusterSize : (i == kStaged || i == kStaged + 1) ? 4 : 1;
  }

  struct Dims {
    int m_rows, n_cols, K, nk, last;  // nk k-tiles; last = stage of the last k-tile (0 when nk = 0)
    bool pair;                        // both ranks of the cluster tile have rows (word 12, bit 16)
  };
  static __device__ __forceinline__ Dims dims(const i32* idx) {
    Dims d;
    d.m_rows = idx[kMRows] & 0xffff;
    d.pair = (idx[kMRows] >> 16) & 1;
    d.n_cols = idx[kNCols];
    d.K = idx[kK];
    d.nk = (d.K + kBK - 1) / kBK;
    d.last = d.nk > 0 ? (d.nk - 1) % kStages : 0;
    return d;
  }
  static __device__ __forceinline__ int a_lid(int s) { return s < 2 ? 0 : 3; }
  static __device__ __forceinline__ int b_lid(int s) { return s < 2 ? s + 1 : s + 2; }
  static __device__ __forceinline__ int a_offset(int s) { return (s & 1) * 2 * kBoxBytes; }
  // The last k-tile that uses stage s, -1 if none.
  static __device__ __forceinline__ int last_use(int s, int nk) { return s < nk ? nk - 1 - (nk - 1 - s) % kStages : -1; }
  // Whether lid (0-5) holds a stage this instruction loads into (or the epilogue's B page).
  static __device__ __forceinline__ bool lid_used(int lid, const Dims& d) {
    if (lid == 0) return d.nk >= 1;
    if (lid == 3) return d.nk >= 3;
    const int s = lid < 3 ? lid - 1 : lid - 2;
    return s < d.nk || s == d.last;
  }

  // [Note: gemm multicast] Whether the pair multicasts B: both ranks have rows (the host's pair bit), and
  // the CTAs' pages coincide ([Note: cluster page renaming]).
  static __device__ __forceinline__ bool multicast(const Dims& d) {
    return kClusterSize > 1 && MK_GEMM_MULTICAST && d.pair && d.m_rows > 0 && d.nk > 0;
  }
  // Consumer warp, lane 0: stage s consumed (both CTAs' copies when multicasting).
  static __device__ __forceinline__ void release_stage(Ctx& c, int s, bool mc) {
    if constexpr (kClusterSize == 1) {
      arrive(c.sem(kEmpty + s));
    } else if (mc) {
      arrive(c.sem(kEmpty + s));
      ptx::mbarrier_arrive_remote(c.sem(kEmpty + s), ptx::cluster_ctarank() ^ 1u);
    } else {
      (void)cuda::ptx::mbarrier_arrive(c.sem(kEmpty + s), static_cast<u32>(kClusterSize));
    }
  }

  static __device__ int lid_release_order(int q, const i32* inst) {
    const Dims d = dims(inst + kWIndices);
    if (d.m_rows <= 0) return q;  // the loader releases every page at once
    // Release time of each lid; ties keep lid order.
    int key[kNumPages];
    for (int s = 0; s < kStages; ++s) key[b_lid(s)] = s == d.last ? 1 << 20 : last_use(s, d.nk);
    key[0] = max(last_use(0, d.nk), last_use(1, d.nk));
    key[3] = max(last_use(2, d.nk), last_use(3, d.nk));
    key[kEpiLid] = (1 << 20) + 1;
    for (int lid = 0; lid < kNumPages; ++lid) {
      int rank = 0;
      for (int j = 0; j < kNumPages; ++j) rank += key[j] < key[lid] || (key[j] == key[lid] && j < lid);
      if (rank == q) return lid;
    }
    return q;
  }

  // The K tail of the last k-tile must be zeroed by hand when the views do not end at the backing's
  // edge (TMA would read live data past K there).
  static __device__ __forceinline__ bool needs_fix(const Ctx& c, const Dims& d) {
    if (d.nk == 0 || d.K % kBK == 0) return false;
    const i32* idx = c.idx();
    const SlotDesc& a = c.slot(c.src_slot(0));
    const SlotDesc& b = c.slot(c.src_slot(1));
    // K runs along backing dim 3 of A (dim 2 with TA) and dim 2 of B (dim 3 with TB).
    const bool a_short = TA ? idx[kA + 2] + d.K < a.dims[2] : idx[kA + 3] + d.K < a.dims[3];
    const bool b_short = TB ? idx[kB + 3] + d.K < b.dims[3] : idx[kB + 2] + d.K < b.dims[2];
    return a_short || b_short;  // SWIGLU: B2's backing has B's shape and the same origins
  }

  // K-tail zeroing of one operand tile in shared memory, columns / rows [kr, 64) of the k-tile.
  // K-major (K along the 128-byte rows): `rows` consecutive swizzled rows (boxes are contiguous).
  static __device__ __forceinline__ void zero_k_cols(unsigned char* p, int rows, int kr, int lane) {
    const int w = kBK - kr;
    for (int e = lane; e < rows * w; e += 32) {
      const int r = e / w, col = kr + e % w;
      *reinterpret_cast<unsigned short*>(p + r * 128 + (((col >> 3) ^ (r & 7)) << 4) + (col & 7) * 2) = 0;
    }
  }
  // MN-major (K along the box rows): whole 128-byte rows [kr, 64) of `boxes` boxes, 4 bytes a lane.
  static __device__ __forceinline__ void zero_k_rows(unsigned char* p, int boxes, int kr, int lane) {
    for (int j = 0; j < boxes; ++j)
      for (int e = kr * 32 + lane; e < kBK * 32; e += 32) reinterpret_cast<u32*>(p + j * kBoxBytes)[e] = 0u;
  }

  // One TMA load of the k-tile into full's stage; `both`: multicast into both CTAs of the cluster, same
  // offsets, both CTAs' full barrier ([Note: gemm multicast]).
  template <int R>
  static __device__ __forceinline__ void load_copy(unsigned char* dst, const TensorMap* map, const i32 (&coords)[R],
                                                   u64* full, bool both) {
    if (!both) cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, full);
    else cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, full,
                                         static_cast<unsigned short>(0x3));
  }

  static __device__ void load(Ctx& c) {
    const i32* idx = c.idx();
    const Dims d = dims(idx);
    if (d.m_rows <= 0) {  // past M: nothing to compute, every page passes straight on
      release_unused(c, 0);
      return;
    }
    bool ok = true;
    if (c.lane == 0)
      for (int lid = 0; lid < 6 && ok; ++lid)
        if (!lid_used(lid, d)) {
          ok = page_wait_lane(c, lid);
          if (ok) page_finish(c, lid);
        }
    if (!warp_ok(c, ok)) return;
    if (!wait_early_inputs(c)) return;  // A, B (and B2); the bias is a late input

    const bool mc = multicast(d);
    mark(c, kEvFlags, mc ? 1 : 0);
    const u32 rank = kClusterSize > 1 ? ptx::cluster_ctarank() : 0u;
    // [Note: gemm wide boxes] An operand copies its k-tile in one TMA (A: 16 KB; B: 16 KB for a tile of
    // <= 128 columns, 32 KB for a wider one) when its slot has the wide maps: K-major (A, or B under TB)
    // through a 64 x 128- or 256-row map, MN-major (A under TA, B) through a split map of 2 or 4 column
    // blocks, whose column origin must then sit on a 64-column block; otherwise in 8 KB boxes. Copies
    // cost issue time more than bytes (benchmarks/probes/tma_ingest.cu; benchmarks/notes.md Session 16:
    // 8192^3 0.85 -> 0.90 of cuBLAS with 16 KB copies).
    const SlotDesc& sa = c.slot(c.src_slot(0));
    const SlotDesc& sb = c.slot(c.src_slot(1));
    const i32* a = idx + kA;
    const i32* b = idx + kB;
    const auto wide = [](const SlotDesc& sd, bool split, int col0) {
      return MK_GEMM_WIDE_BOXES && (split ? (sd.flags & 4) && col0 % kBox == 0 : (sd.flags & 2) != 0);
    };
    const bool wa = wide(sa, TA, a[3]);
    const bool wb = wide(sb, !TB, b[3]) && (!SWIGLU || wide(c.slot(c.src_slot(2)), !TB, b[3]));
    const int nbox = (d.n_cols + kBox - 1) / kBox;  // 64x64 boxes of B (and as many of B2 for SWIGLU)
    // Multicast splits B between the ranks, so a wide B goes in 16 KB halves, one per rank.
    const int ua = wa ? 2 : 1, ub = !wb ? 1 : nbox > 2 && !mc ? 4 : 2;  // 64x64 boxes per copy
    const int na = wa ? 1 : d.m_rows > kBox ? 2 : 1;
    const int nb = (nbox + ub - 1) / ub;  // copies of B (and as many of B2)
    // [Note: gemm copies per lane] Lane 0 waits for the stage and arms full[s]; then each copy of the
    // k-tile is issued by its own lane, all in one warp instruction: lane l < na copies A's part l, the
    // next nb lanes B's, the next nb B2's. One lane issuing a k-tile's 4-6 boxes one after the other
    // took ~0.15 us a box (benchmarks/probes/tma_ingest.cu, H200: a 32 KB stage of four 8 KB boxes
    // 638 ns from lane 0, 473 ns one per lane), the whole k-step of a 128 x 128 tile.
    const int l = c.lane;
    const bool is_a = l < na, is_b = !is_a && l < na + nb, is_b2 = SWIGLU && !is_a && !is_b && l < na + 2 * nb;
    const int j = is_b ? l - na : l - na - nb;  // B / B2 copy
    const bool copies = !kExpNoLoad && (is_a || ((is_b || is_b2) && (!mc || static_cast<u32>(j & 1) == rank)));
    // The copy's map: wide map 0 / 3 (128 / 256 rows) for K-major, 1 / 2 (2 / 4 blocks) for MN-major.
    const bool w = is_a ? wa : wb, split = is_a ? TA : !TB, four = !is_a && ub == 4;
    const int ms = c.src_slot(is_a ? 0 : is_b2 ? 2 : 1);
    const int wk = split ? (four ? 2 : 1) : (four ? 3 : 0);
    const TensorMap* map = !copies ? nullptr : w ? c.xmap_wide_lane(ms, wk) : c.xmap_lane(ms);
    const u32 stage_bytes =
        kExpNoLoad ? 0u : static_cast<u32>((na * ua + (SWIGLU ? 2 : 1) * nb * ub) * kBoxBytes);
    long long empty_wait = 0;  // [Note: gemm wait stats]
    for (int kt = 0; kt < d.nk; ++kt) {
      const int s = kt & 3;
      if (l == 0) {
        if (kt < kStages) {
          if ((s & 1) == 0) ok = page_wait_lane(c, a_lid(s));
          if (ok) ok = page_wait_lane(c, b_lid(s));
          if (MK_GEMM_WAIT_STATS && kt == 0) mark_value(c, kEvGemmPagesKt0, ptx::globaltimer());
          if (ok && mc) {  // both CTAs' stage-s pages are free before either multicasts into them
            ptx::mbarrier_arrive_cluster(c.sem(kReady + s), rank ^ 1u);
            ok = wait_lane<true>(c, c.sem(kReady + s), 0u, 3, 220 + s);
          }
        } else {
          const long long t0 = MK_GEMM_WAIT_STATS ? clock64() : 0;
          ok = wait_lane(c, c.sem(kEmpty + s), static_cast<u32>(((kt >> 2) - 1) & 1), 3, 200 + s);
          if constexpr (MK_GEMM_WAIT_STATS) empty_wait += clock64() - t0;
        }
        if (ok)
          (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                     cuda::ptx::space_shared, c.sem(kFull + s), stage_bytes);
      }
      if (!warp_ok(c, ok)) return;
      if (copies) {
        // Coordinates (column, row, d, b) on the backing: K along the columns unless transposed; a split
        // map's are (column % 64 = 0, row, column / 64, d, b).
        unsigned char* dst;
        i32 col, row, bd, bb;
        if (is_a) {
          dst = c.page(a_lid(s)) + a_offset(s) + l * kBoxBytes;
          col = TA ? a[3] + l * kBox : a[3] + kt * kBK;
          row = TA ? a[2] + kt * kBK : a[2] + l * kBox;
          bd = a[1], bb = a[0];
        } else {
          const int box = j * ub;  // first 64x64 box of the copy
          dst = c.page(b_lid(s)) + (is_b2 ? 2 + box : box) * kBoxBytes;
          col = TB ? b[3] + kt * kBK : b[3] + box * kBox;
          row = TB ? b[2] + box * kBox : b[2] + kt * kBK;
          bd = b[1], bb = b[0];
        }
        const bool both = mc && !is_a;
        if (w && split) {
          const i32 coords[5] = {0, row, col / kBox, bd, bb};
          load_copy(dst, map, coords, c.sem(kFull + s), both);
        } else {
          const i32 coords[4] = {col, row, bd, bb};
          load_copy(dst, map, coords, c.sem(kFull + s), both);
        }
      }
      if (kt == 0) mark(c, kEvFirstIssue);
    }
    if (c.lane == 0) arrive(c.sem(kIssued));
    if constexpr (MK_GEMM_WAIT_STATS) mark(c, kEvEmptyWaitCycles, static_cast<u64>(empty_wait));

    if (needs_fix(c, d)) {  // zero K [kr, 64) of the last k-tile's A and B tiles
      const int s = d.last, kr = d.K - (d.nk - 1) * kBK;
      if (!wait(c, c.sem(kFull + s), static_cast<u32>(((d.nk - 1) >> 2) & 1))) return;
      unsigned char* pa = c.page(a_lid(s)) + a_offset(s);
      if (TA) zero_k_rows(pa, 2, kr, c.lane);
      else zero_k_cols(pa, kBM, kr, c.lane);
      unsigned char* pb = c.page(b_lid(s));
      if (TB) zero_k_cols(pb, kBN, kr, c.lane);
      else zero_k_rows(pb, 4, kr, c.lane);
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // wgmma reads through the async proxy
      __syncwarp();
      if (c.lane == 0) arrive(c.sem(kFixed));
    }
  }

  // Storer, one lane: as each stage's last k-tile is consumed, free its pages (not the epilogue's B
  // page), so the next instruction's loads start while this one finishes its mainloop and epilogue;
  // k-tiles [k0, k1) of the last kStages. After `issued` each empty[s] is at most one phase behind its
  // last use, so the parity waits are exact.
  static __device__ bool drain(Ctx& c, const Dims& d, int k0, int k1) {
    if (!wait_lane(c, c.sem(kIssued), 0, 3, 211)) return false;
    for (int kt = max(k0, max(0, d.nk - kStages)); kt < k1; ++kt) {
      const int s = kt & 3;
      if (!wait_lane(c, c.sem(kEmpty + s), static_cast<u32>((kt >> 2) & 1), 3, 200 + s)) return false;
      if (s != d.last) page_finish(c, b_lid(s));
      if (last_use(s ^ 1, d.nk) < kt) page_finish(c, a_lid(s));
      if (MK_GEMM_WAIT_STATS && kt == d.nk - 3) mark_value(c, kEvGemmDrainHead, ptx::globaltimer());
    }
    return true;
  }

  static __device__ __forceinline__ float half_at(const unsigned short* p) { return H::bits_to_float(__ldcg(p)); }

  // The bias rows of this thread's accumulator rows r and r + 8 (r = 64wg + 16(warp % 4) + lane / 4),
  // clamped into the tile (rows >= m_rows are never stored; they only must not read out of bounds).
  struct BiasRows {
    const unsigned short* row[2];
    int last;  // the last column pair's first column: n_cols - 2 (n_cols is a multiple of 8)
  };
  static __device__ __forceinline__ BiasRows bias_rows(const Ctx& c, const Dims& d, int wg) {
    const SlotDesc& cs = c.slot(c.src_slot(2));
    const int r = 64 * wg + 16 * (c.warp & 3) + (c.lane >> 2);
    const unsigned short* base =
        reinterpret_cast<const unsigned short*>(cs.ptr) + static_cast<long long>(c.idx()[kBiasOff]);
    BiasRows b;
#pragma unroll
    for (int h = 0; h < 2; ++h)  // m_rows >= 1 here
      b.row[h] = BIAS == 1 ? base : base + static_cast<long long>(min(r + 8 * h, d.m_rows - 1)) * cs.dims[3];
    b.last = d.n_cols - 2;
    return b;
  }
  // Columns col, col + 1 of bias row h (col clamped: columns >= n_cols are never stored). 2-byte loads:
  // a sliced bias view need not be 4-byte aligned.
  static __device__ __forceinline__ float2 bias_pair(const BiasRows& b, int h, int col) {
    const unsigned short* p = b.row[h] + min(col, b.last);
    return make_float2(half_at(p), half_at(p + 1));
  }

  // [Note: gemm rope epilogue] The cos / sin rows of this thread's accumulator rows r, r + 8 (clamped
  // into the tile, like bias_rows): table row (m + r) % T of D.
  struct RopeRows {
    const u32* cos[2];
    const u32* sin[2];
  };
  static __device__ __forceinline__ RopeRows rope_rows(const Ctx& c, const Dims& d, int wg) {
    RopeRows t{};
    if constexpr (ROPE != 0) {
      const SlotDesc &cs = c.slot(c.src_slot(kRopeSrc)), &sn = c.slot(c.src_slot(kRopeSrc + 1));
      // 32-bit: a 64-bit % is a subroutine call (__cuda_sm20_rem_s64). M and T < 2^31 (int32 words).
      const u32 T = static_cast<u32>(cs.dims[0] * cs.dims[1] * cs.dims[2]);
      const int r = 64 * wg + 16 * (c.warp & 3) + (c.lane >> 2);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const u32 row = static_cast<u32>(c.idx()[kD + 2] + min(r + 8 * h, d.m_rows - 1)) % T;
        t.cos[h] = reinterpret_cast<const u32*>(cs.ptr) + static_cast<size_t>(row) * (ROPE / 2);  // in pairs
        t.sin[h] = reinterpret_cast<const u32*>(sn.ptr) + static_cast<size_t>(row) * (ROPE / 2);
      }
    }
    return t;
  }
  // The 16-bit pair at column col (even) of a table row, in fp32.
  static __device__ __forceinline__ float2 rope_pair(const u32* row, int col) {
    const u32 w = __ldcg(row + col / 2);
    return make_float2(H::lo(w), H::hi(w));
  }
  // [Note: gemm rope tables] Whether warpgroup wg's table rows are TMA-loaded into its epilogue page: its
  // rows (from the tile's m origin + 64 wg, at most 64) lie in one run of the tables' row dim (no wrap at
  // T, nor at a batch of a (B, S, D) table). coords: the boxes' (row, d, b) on the tables.
  static __device__ __forceinline__ bool rope_tile(const Ctx& c, const Dims& d, int wg, i32* coords = nullptr) {
    if constexpr (ROPE == 0) return false;
    const i32* t = c.slot(c.src_slot(kRopeSrc)).dims;
    const u32 R = static_cast<u32>(t[2]), T = static_cast<u32>(t[0] * t[1]) * R;
    const u32 t0 = static_cast<u32>(c.idx()[kD + 2] + kBox * wg) % T, r = t0 % R;
    if (r + static_cast<u32>(min(kBox, d.m_rows - kBox * wg)) > R) return false;
    if (coords) coords[0] = static_cast<i32>(r), coords[1] = static_cast<i32>(t0 / R % t[1]), coords[2] = static_cast<i32>(t0 / R / t[1]);
    return true;
  }
  // [Note: gemm rope tables] Storer, whole warp: TMA-load warpgroup wg's cos rows (64 x D) into boxes
  // [0, D/64) of `lid` and its sin rows into boxes [D/64, D/32), one 64x64 box a lane, arriving on bias[wg]
  // with their bytes. The caller owns the page.
  static __device__ __forceinline__ void rope_tile_load(Ctx& c, const Dims& d, int wg, int lid) {
    constexpr int kHalfBoxes = ROPE / kBox, nb = 2 * kHalfBoxes;
    i32 at[3];
    rope_tile(c, d, wg, at);
    const TensorMap* map = c.lane < nb ? c.xmap_lane(c.src_slot(kRopeSrc + c.lane / kHalfBoxes)) : nullptr;
    if (c.lane == 0)
      cuda::ptx::mbarrier_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                    c.sem(kBias + wg), static_cast<u32>(nb * kBoxBytes));
    __syncwarp();
    if (c.lane < nb) {
      const i32 coords[4] = {kBox * (c.lane % kHalfBoxes), at[0], at[1], at[2]};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                      c.page(lid) + c.lane * kBoxBytes, map, coords, c.sem(kBias + wg));
    }
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kBias + wg));
  }
  // Thread lane l's column pair of register group i (columns 8i + 2(l % 4), +1) in page row `row` of a staged
  // 64 x 256 tile: box i/8, 16-byte chunk i%8 of the row, swizzled by row % 8 = l/4 (the thread's rows are
  // 16 w + l/4 and + 8). Every epilogue writes its results there.
  static __device__ __forceinline__ unsigned char* pair_at(unsigned char* page, int i, int l, int row) {
    return page + (i >> 3) * kBoxBytes + (((i & 7) ^ (l >> 2)) << 4) + (l & 3) * 4 + row * 128;
  }
  static __device__ __forceinline__ float2 staged_pair(unsigned char* page, int i, int l, int row) {
    return H::unpack2(*reinterpret_cast<const typename H::T2*>(pair_at(page, i, l, row)));
  }
  // [Note: gemm rope epilogue] Column group j of every head (j < D/16) with its partner group j + D/16:
  // their 8 table pairs are loaded once and serve every head of the tile, and both groups' accumulators
  // die together (loading each head's tables as the columns come spilled: the reuse across heads kept
  // them all live next to the accumulators). Stores the rounded results in the staged page `out`.
  // staged: the tables are in `out` ([Note: gemm rope tables]): cos column n at the place of output column
  // n, sin column n at that of output column D + n, so a thread reads its pairs where it (alone) writes
  // later, and group j's writes reach only pairs read already.
  template <int N>
  static __device__ __forceinline__ void rope_epilogue(const float (&acc)[N / 2], unsigned char* out, bool staged,
                                                       const RopeRows& t, const BiasRows& bias, int l, int r0) {
    constexpr int kHalf = ROPE / 16, kGroups = ROPE / 8;  // register groups of 8 columns: half a head, a head
#pragma unroll
    for (int j = 0; j < kHalf; ++j) {
      const int col = 8 * j + 2 * (l & 3);
      float2 cl[2], sl[2], ch[2], sh[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (staged) {
          const int row = r0 + 8 * h;
          cl[h] = staged_pair(out, j, l, row), ch[h] = staged_pair(out, j + kHalf, l, row);
          sl[h] = staged_pair(out, kGroups + j, l, row), sh[h] = staged_pair(out, kGroups + j + kHalf, l, row);
        } else {
          cl[h] = rope_pair(t.cos[h], col), sl[h] = rope_pair(t.sin[h], col);
          ch[h] = rope_pair(t.cos[h], col + ROPE / 2), sh[h] = rope_pair(t.sin[h], col + ROPE / 2);
        }
      }
#pragma unroll
      for (int head = 0; head < N / ROPE; ++head) {
        const int il = head * kGroups + j, ih = il + kHalf;
        float2 bl = make_float2(0.f, 0.f), bh = bl;
        if constexpr (BIAS == 1) bl = bias_pair(bias, 0, 8 * il + 2 * (l & 3)), bh = bias_pair(bias, 0, 8 * ih + 2 * (l & 3));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float l0 = acc[4 * il + 2 * h] + bl.x, l1 = acc[4 * il + 2 * h + 1] + bl.y;
          const float h0 = acc[4 * ih + 2 * h] + bh.x, h1 = acc[4 * ih + 2 * h + 1] + bh.y;
          // rotate_half: the low half takes -high, the high half takes +low.
          const typename H::T2 lo = H::pack2(l0 * cl[h].x - h0 * sl[h].x, l1 * cl[h].y - h1 * sl[h].y);
          const typename H::T2 hi = H::pack2(h0 * ch[h].x + l0 * sh[h].x, h1 * ch[h].y + l1 * sh[h].y);
          *reinterpret_cast<typename H::T2*>(pair_at(out, il, l, r0 + 8 * h)) = lo;
          *reinterpret_cast<typename H::T2*>(pair_at(out, ih, l, r0 + 8 * h)) = hi;
        }
      }
      __syncwarp();  // keeps ptxas from hoisting the next group's table loads over these stores
    }
  }

  // [Note: gemm early bias] With MK_GEMM_BIAS_EARLY=1, a bias_row tile of <= 128 columns whose bias has no late
  // barrier (a graph input, or a producer the loader's early barriers cover: their acquire reaches the
  // consumers through full[0]) reads its bias right after k-tile 0 landed, into registers held across the
  // mainloop (16-bit pairs packed in 32 bits: 16 registers), instead of in the epilogue, where
  // its two batches of L2 round trips took ~2.7 us (benchmarks/notes.md Session 14).
  static constexpr bool kBiasEarlyOk = MK_GEMM_BIAS_EARLY && BIAS == 1 && !SWIGLU && ROPE == 0;
  template <int N>
  static __device__ __forceinline__ void bias_early_load(const Ctx& c, const Dims& d, int wg, u32 (&be)[N / 8]) {
    const BiasRows b = bias_rows(c, d, wg);
#pragma unroll
    for (int i = 0; i < N / 8; ++i) {
      const unsigned short* p = b.row[0] + min(8 * i + 2 * (c.lane & 3), b.last);
      be[i] = static_cast<u32>(__ldcg(p)) | static_cast<u32>(__ldcg(p + 1)) << 16;
    }
  }
  static __device__ __forceinline__ float2 bias_unpack(u32 w) { return make_float2(H::lo(w), H::hi(w)); }

  // [Note: gemm rms_in] Accumulator rows r, r + 8 (r = 64 wg + 16 (warp % 4) + lane / 4; register 4i + 2h (+1) is
  // row half h) times rsqrt(mean + eps), the mean over K of the squares whose quarter sums (this lane's) are
  // sum[h]: the quad's four lanes hold the same rows.
  template <int N>
  static __device__ __forceinline__ void scale_rows(float (&acc)[N / 2], const float (&sum)[2], int K, float eps) {
    float scale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float s = sum[h];
      s += __shfl_xor_sync(0xffffffffu, s, 1);
      s += __shfl_xor_sync(0xffffffffu, s, 2);
      scale[h] = rsqrtf(s / static_cast<float>(K) + eps);
    }
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[i] *= scale[(i >> 1) & 1];
  }

  // One k16 step of the warpgroup's 64 x N product (N = 256: the whole tile; 128: a narrow tile).
  template <int N>
  static __device__ __forceinline__ void mma(float (&acc)[N / 2], u64 da, u64 db) {
    if constexpr (N == 256) ptx::wgmma_m64n256k16_ss<TA ? 1 : 0, TB ? 0 : 1, F16>(acc, da, db, 1);
    else ptx::wgmma_m64n128k16_ss<TA ? 1 : 0, TB ? 0 : 1, F16>(acc, da, db, 1);
  }

  // [Note: gemm rms_in] (src/trace/fuse_rms_norm_gemm.h) A is the norm's input x, whole rows of K. Per k-tile each
  // thread loads its A fragment from the stage (ldmatrix: rows r, r + 8 of its warp's 16, the 16 columns of each
  // k16 step; r = lane / 4), adds its elements' squares to its two rows' sums, multiplies each pair by the
  // weight's pair at its columns (one bf16 rounding: bf16(x * w)) and issues the wgmma with A from registers.
  // The epilogue scales accumulator row r by rsqrt(sum / K + eps), the quad's four partial sums added first
  // (its lanes hold the other columns of the same rows). So D = r * (bf16(x * w) @ B): eager's
  // bf16(w * bf16(x * r)) @ B up to the rounding of another product (~3e-3 relative where the unfolded norm
  // is exact, e.g. nn.RMSNorm; within the bf16 noise of HF's norm). The fp32 accumulator holds the product before
  // the row scale, so |x| |w| |B| K past ~1e37 overflows where eager, normalizing first, stays finite. The weight is a graph input, read
  // through the read-only path (2-byte loads: a sliced view need not be 4-byte aligned), columns past K
  // clamped (the stage's A is zero there).
  struct RmsIn {
    const unsigned short* w;  // w[2 (lane % 4)]
    int k_last;               // the last 8-column group's first column: K - 8 (K a multiple of 8)
    float ss[2];              // rows r, r + 8: sums of x^2 so far
    u32 wk[8];                // this k-tile's weight pairs: k16 step k, columns + 8h at wk[2k + h]
    __device__ __forceinline__ void init(const Ctx& c, const Dims& d) {
      w = reinterpret_cast<const unsigned short*>(c.slot(c.src_slot(kRmsWSrc)).ptr) + 2 * (c.lane & 3);
      k_last = d.K - 8;
      ss[0] = ss[1] = 0.f;
    }
    __device__ __forceinline__ void load_w(int kt) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const unsigned short* p = w + min(kBK * kt + 8 * j, k_last);
        wk[j] = static_cast<u32>(__ldg(p)) | static_cast<u32>(__ldg(p + 1)) << 16;
      }
    }
    // The k-tile's A fragments of this thread (four k16 steps), scaled by w, from warpgroup wg's 64 x 64 box.
    __device__ __forceinline__ void load_a(const Ctx& c, u32 box, u32 (&a)[4][4]) {
      const int l = c.lane, row = 16 * (c.warp & 3) + (l & 7) + 8 * ((l >> 3) & 1);
#pragma unroll
      for (int k = 0; k < kBK / 16; ++k) ptx::ldmatrix_x4(a[k], box + row * 128 + (((2 * k + (l >> 4)) ^ (l & 7)) << 4));
#pragma unroll
      for (int k = 0; k < kBK / 16; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {  // register j: row r + 8 (j % 2), columns + 8 (j / 2)
          const float2 x = H::unpack2(*reinterpret_cast<const typename H::T2*>(&a[k][j]));
          ss[j & 1] = fmaf(x.x, x.x, fmaf(x.y, x.y, ss[j & 1]));
          const typename H::T2 v = __hmul2(*reinterpret_cast<const typename H::T2*>(&a[k][j]),
                                            *reinterpret_cast<const typename H::T2*>(&wk[2 * k + (j >> 1)]));
          a[k][j] = *reinterpret_cast<const u32*>(&v);
        }
    }
  };
  template <int N>
  static __device__ __forceinline__ void mma_rs(float (&acc)[N / 2], const u32 (&a)[4], u64 db) {
    if constexpr (N == 256) ptx::wgmma_m64n256k16_rs<TB ? 0 : 1, F16>(acc, a[0], a[1], a[2], a[3], db, 1);
    else ptx::wgmma_m64n128k16_rs<TB ? 0 : 1, F16>(acc, a[0], a[1], a[2], a[3], db, 1);
  }

  // Consumers. A tile of at most 128 columns (the profile's narrow tiles, or a ragged last tile) runs
  // m64n128k16: half the tensor-core work and accumulator registers of m64n256k16.
  static __device__ void compute(Ctx& c) {
    const Dims d = dims(c.idx());
    if (d.m_rows <= 0) return;
    if constexpr (SWIGLU) compute_n<256>(c, d);  // n_cols <= 128 output columns, 256 B + B2 columns
    else if (d.n_cols <= 128) compute_n<128>(c, d);
    else compute_n<256>(c, d);
  }
  template <int N>
  static __device__ __forceinline__ void compute_n(Ctx& c, const Dims& d) {
    constexpr int kAcc = N / 2;
    // rms_in: the next k-tile's A fragments reuse the registers this one's wgmma read (wait_group 0).
    constexpr bool kEarly = kRmsIn || MK_GEMM_EARLY_RELEASE == 2 || (MK_GEMM_EARLY_RELEASE == 1 && N <= 128);
    const int wg = c.warp >> 2;
    const bool active = wg * kBox < d.m_rows;  // warpgroup 1 stores nothing for m_rows <= 64
    const bool fix = needs_fix(c, d);
    const bool mc = multicast(d);
    float acc[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
    constexpr bool kBiasEarly = kBiasEarlyOk && N <= 128;  // [Note: gemm early bias]
    const bool early = kBiasEarly && active && d.nk > 0 && c.num_src_late() == 0;
    u32 be[kBiasEarly ? N / 8 : 1];
    long long loop_begin = 0, full_wait = 0, head_wait = 0;  // [Note: gemm wait stats]
    [[maybe_unused]] RmsIn rin;
    if constexpr (kRmsIn) rin.init(c, d);

    for (int kt = 0; kt < d.nk; ++kt) {
      const int s = kt & 3;
      const bool last_fixed = kt == d.nk - 1 && fix;
      const u32 parity = last_fixed ? 0u : static_cast<u32>((kt >> 2) & 1);
      const int sem = last_fixed ? kFixed : kFull + s;
      const long long t0 = MK_GEMM_WAIT_STATS ? clock64() : 0;
      if constexpr (kRmsIn) rin.load_w(kt);  // in flight during the wait
      if (!mma_wait(c, c.sem(sem), parity, sem)) return;
      if constexpr (MK_GEMM_WAIT_STATS) {  // [Note: gemm wait stats]
        const long long t1 = clock64();
        if (kt == 0) loop_begin = t1;
        else full_wait += t1 - t0;
        if (kt > 0 && kt < kStages) head_wait += t1 - t0;  // [Note: gemm turn stats]
      }
      if (kt == 0 && c.warp == 0) mark(c, kEvFirstFull);
      if constexpr (kBiasEarly)
        if (kt == 0 && early) bias_early_load<N>(c, d, wg, be);
      {  // both warpgroups issue even when warpgroup 1 has no rows (m_rows <= 64): it then multiplies
         // stale shared memory into rows nobody stores, since a branch here serializes the wgmma (C7518)
        const u32 a0 = ptx::smem_addr(c.page(a_lid(s)) + a_offset(s) + wg * kBoxBytes);
        const u32 b0 = ptx::smem_addr(c.page(b_lid(s)));
        [[maybe_unused]] u32 af[kRmsIn ? kBK / 16 : 1][4];
        if constexpr (kRmsIn) rin.load_a(c, a0, af);
#pragma unroll
        for (int i = 0; i < kAcc; ++i) ptx::fence_operand(acc[i]);
        ptx::wgmma_fence();
#ifndef MK_EXP_GEMM_NO_MMA
#pragma unroll
        for (int k = 0; k < kBK / 16; ++k)
#else
        for (int k = 0; k < 0; ++k)
#endif
        {
          const u64 db = TB ? ptx::wgmma_desc_sw128(b0 + 32 * k, 16, 1024) : ptx::wgmma_desc_sw128(b0 + 2048 * k, 8 * 1024, 1024);
          if constexpr (kRmsIn) mma_rs<N>(acc, af[k], db);
          else mma<N>(acc, TA ? ptx::wgmma_desc_sw128(a0 + 2048 * k, 8 * 1024, 1024) : ptx::wgmma_desc_sw128(a0 + 32 * k, 16, 1024), db);
        }
        ptx::wgmma_commit();
        if constexpr (kEarly) ptx::wgmma_wait<0>();  // k-tile kt has been read: hand its stage back
        else ptx::wgmma_wait<1>();                   // k-tile kt-1 has been read: hand its stage back
#pragma unroll
        for (int i = 0; i < kAcc; ++i) ptx::fence_operand(acc[i]);
      }
      if (kEarly || kt > 0) {
        __syncwarp();
        if (c.lane == 0) release_stage(c, kEarly ? s : (kt - 1) & 3, mc);
      }
    }
    {
      ptx::wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < kAcc; ++i) ptx::fence_operand(acc[i]);
    }
    if (c.warp == 0) mark(c, kEvMainloopEnd);
    if (MK_GEMM_WAIT_STATS && c.warp == 0) {
      mark(c, kEvMainloopCycles, static_cast<u64>(clock64() - loop_begin));
      mark(c, kEvFullWaitCycles, static_cast<u64>(full_wait));
      mark(c, kEvGemmHeadWaitCycles, static_cast<u64>(head_wait));
    }
    if (!kEarly && d.nk > 0) {
      __syncwarp();
      if (c.lane == 0) release_stage(c, d.last, mc);
    }
    if (!active) return;
    if constexpr (kRmsIn) scale_rows<N>(acc, rin.ss, d.K, __int_as_float(RMS_EPS));
    BiasRows bias{};
    // bias_full or the rope tables through the epilogue page ([Note: gemm bias tile], [Note: gemm rope tables]).
    const bool tile = staged_tile(c, d, wg);
    if (BIAS == 1 || ((kFullBias || ROPE != 0) && !tile)) {  // a bias row, or the tables, read through L2
      if (!wait_late_inputs(c)) return;
      if constexpr (BIAS != 0) bias = bias_rows(c, d, wg);
    }

    // Epilogue page: lid 6 (warpgroup 0), the last stage's B page once both warpgroups read it (1).
    // A staged tile: once the storer's TMA brought this warpgroup's rows there.
    unsigned char* out;
    if (tile) {
      if (!wait(c, c.sem(kBias + wg), 0)) return;
      out = wg == 0 ? c.page(kEpiLid) : c.page(b_lid(d.last));
    } else if (wg == 0) {
      if (!page_wait(c, kEpiLid)) return;
      out = c.page(kEpiLid);
    } else {
      if (d.nk > 0) {
        if (!wait(c, c.sem(kEmpty + d.last), static_cast<u32>(((d.nk - 1) >> 2) & 1))) return;
      } else if (!page_wait(c, b_lid(0))) {
        return;
      }
      out = c.page(b_lid(d.last));
    }
    if (c.warp == 0) mark(c, kEvEpilogueReady);
    // Thread (warp w, lane l) holds rows 16w + l/4 (+8) and columns 8i + 2(l%4) (+1), i < N/8: box
    // i/8, 16-byte chunk i%8 of the row, swizzled by row % 8 = l/4 (conflict-free: the 8 rows of a
    // store hit 8 different chunks).
    const int w = c.warp & 3, l = c.lane, r0 = 16 * w + (l >> 2);
    if constexpr (ROPE != 0) {
      rope_epilogue<N>(acc, out, tile, tile ? RopeRows{} : rope_rows(c, d, wg), bias, l, r0);
    } else {
      // Bias: added in fp32 before the one rounding, column pair 8i + 2(l % 4) of rows r0 (+8).
      // SWIGLU: output columns are the first N / 2 accumulator columns (B's), gated by silu and
      // multiplied by their B2 twins N / 2 further (register index + N / 4).
#pragma unroll
      for (int i = 0; i < (SWIGLU ? N / 16 : N / 8); ++i) {
        unsigned char* box = pair_at(out, i, l, 0);  // + (r0 + 8h) * 128: rows r0, r0 + 8
        float2 bv[2] = {make_float2(0.f, 0.f), make_float2(0.f, 0.f)};
        if constexpr (kBiasEarly)
          if (early) {
            bv[0] = bv[1] = bias_unpack(be[i]);
          }
        if (!early) {
          if constexpr (BIAS == 1) bv[0] = bv[1] = bias_pair(bias, 0, 8 * i + 2 * (l & 3));
          if constexpr (kFullBias) {
            if (tile) {  // this thread's pair of the bias tile, where its result goes
#pragma unroll
              for (int h = 0; h < 2; ++h)
                bv[h] = H::unpack2(*reinterpret_cast<const typename H::T2*>(box + (r0 + 8 * h) * 128));
            } else {
              bv[0] = bias_pair(bias, 0, 8 * i + 2 * (l & 3));
              bv[1] = bias_pair(bias, 1, 8 * i + 2 * (l & 3));
            }
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float x0 = acc[4 * i + 2 * h], x1 = acc[4 * i + 2 * h + 1];
          if constexpr (BIAS != 0) x0 += bv[h].x, x1 += bv[h].y;
          if constexpr (ACT != Unary::identity && ACT != Unary::relu) x0 = unary<ACT>(x0), x1 = unary<ACT>(x1);
          if constexpr (SWIGLU) {
            x0 = unary<Unary::silu>(x0) * acc[N / 4 + 4 * i + 2 * h];
            x1 = unary<Unary::silu>(x1) * acc[N / 4 + 4 * i + 2 * h + 1];
          }
          typename H::T2 v = H::pack2(x0, x1);
          // relu on the rounded pair: one max.bf16x2 instead of a compare and a select per element (the
          // seed MLP's epilogue body 1.28 -> 0.90 us a 128 x 256 tile, H200, 2026-12-04, benchmarks/notes.md
          // Session 30). Rounding is monotonic and keeps 0; the max keeps NaN, as torch.relu.
          if constexpr (ACT == Unary::relu) v = __hmax2_nan(v, H::pack2(0.f, 0.f));
          *reinterpret_cast<typename H::T2*>(box + (r0 + 8 * h) * 128) = v;
        }
        // Bias loads are free to move ahead of the page stores (shared vs global): let them, one box of
        // columns at a time (the fence keeps ptxas from hoisting them all, which spills).
        if constexpr (BIAS != 0) if (!tile && (i & 7) == 7) __syncwarp();
      }
    }
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the TMA store reads this page
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kStaged + wg));
  }

  // [Note: gemm bias tile] Whether this bias_full instruction TMA-loads its bias tile: its first column
  // sits on 16 bytes (BIAS 2: codegen found every instruction so).
  static __device__ __forceinline__ bool bias_tile(const Ctx& c) {
    if constexpr (BIAS == 2) return true;
    return BIAS == 3 && c.idx()[kBiasOff] % c.slot(c.src_slot(2)).dims[3] % 8 == 0;
  }
  // Whether the storer TMA-loads warpgroup wg's epilogue input (bias_full rows or rope tables) into its
  // epilogue page, and that load itself.
  static __device__ __forceinline__ bool staged_tile(const Ctx& c, const Dims& d, int wg) {
    return kFullBias ? bias_tile(c) : rope_tile(c, d, wg);
  }
  static __device__ __forceinline__ void staged_load(Ctx& c, const Dims& d, int wg, int lid) {
    if constexpr (kFullBias) bias_tile_load(c, d, wg, lid);
    else if constexpr (ROPE != 0) rope_tile_load(c, d, wg, lid);
  }
  // [Note: gemm bias tile] Storer, whole warp: TMA-load warpgroup wg's bias rows (64 x n_cols, one 64x64
  // box a lane) into `lid`, arriving on bias[wg] with their bytes. The caller owns the page.
  static __device__ __forceinline__ void bias_tile_load(Ctx& c, const Dims& d, int wg, int lid) {
    const int cs = c.src_slot(2), nb = (d.n_cols + kBox - 1) / kBox;
    const TensorMap* map = c.lane < nb ? c.xmap_lane(cs) : nullptr;
    if (c.lane == 0)
      cuda::ptx::mbarrier_expect_tx(cuda::ptx::sem_relaxed, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                    c.sem(kBias + wg), static_cast<u32>(nb * kBoxBytes));
    __syncwarp();
    if (c.lane < nb) {
      const i32* dims = c.slot(cs).dims;
      i32 off = c.idx()[kBiasOff];  // the bias element at the tile's (m, n0): (b, d, r, col) on the backing
      const i32 col = off % dims[3];
      off /= dims[3];
      const i32 row = off % dims[2];
      off /= dims[2];
      const i32 coords[4] = {col + c.lane * kBox, row + wg * kBox, off % dims[1], off / dims[1]};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                      c.page(lid) + c.lane * kBoxBytes, map, coords, c.sem(kBias + wg));
    }
    __syncwarp();
    if (c.lane == 0) arrive(c.sem(kBias + wg));
  }

  static __device__ void store(Ctx& c) {
    const i32* idx = c.idx();
    const Dims d = dims(idx);
    if (d.m_rows > 0) {
      const bool two = kBox < d.m_rows;  // warpgroup 1 has rows
      const bool t0 = staged_tile(c, d, 0), t1 = two && staged_tile(c, d, 1);
      if (t0 || t1) {
        // [Note: gemm bias tile] Warpgroup 0's rows into the epilogue page at once when the bias is
        // there already (a residual, the rope tables); else (a split-K chain's previous piece) the stages
        // but the last drain first, so that the late bias holds back only the last k-tile's pages. Then
        // the last k-tile's wait, warpgroup 1's rows into its B page (K = 0: free).
        const bool now = late_inputs_ready(c);
        if (!now && !warp_ok(c, c.lane != 0 || drain(c, d, 0, d.nk - 1))) return;
        if (!now && !wait_late_inputs(c)) return;
        if (t0 && !warp_ok(c, c.lane != 0 || page_wait_lane(c, kEpiLid))) return;
        if (t0) staged_load(c, d, 0, kEpiLid);
        if (!warp_ok(c, c.lane != 0 || drain(c, d, now ? 0 : d.nk - 1, d.nk))) return;
        if (t1 && !warp_ok(c, c.lane != 0 || d.nk > 0 || page_wait_lane(c, b_lid(0)))) return;
        if (t1) staged_load(c, d, 1, b_lid(d.last));
      } else if (!warp_ok(c, c.lane != 0 || drain(c, d, 0, d.nk))) {
        return;
      }
      if (!wait_reuse(c)) return;
      const int ds = c.dst_slot(0);
      const i32* o = idx + kD;
      const int nb = (d.n_cols + kBox - 1) / kBox;
      // Box j of each row half from lane j ([Note: gemm copies per lane]); each lane commits its own.
      // [Note: gemm epilogue page order] Warpgroup 1's half first, and its page (the last stage's B page)
      // released as soon as its stores have read it: the next instruction renames that page to its
      // k-tile 3's B (lid_release_order ranks it 5th), which cannot load before; warpgroup 0's page (the
      // epilogue page, ranked last) is the next instruction's own epilogue page, needed only at its end.
      const TensorMap* dmap = c.lane < nb ? c.xmap_lane(ds) : nullptr;
      for (int h = 0; h < (two ? 2 : 1); ++h) {
        const int wg = two ? 1 - h : 0;
        if (!wait(c, c.sem(kStaged + wg), 0)) return;
        if (c.lane < nb) {
          unsigned char* src = wg == 0 ? c.page(kEpiLid) : c.page(b_lid(d.last));
          const i32 coords[4] = {o[3] + c.lane * kBox, o[2] + wg * kBox, o[1], o[0]};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, dmap, coords,
                                          src + c.lane * kBoxBytes);
          cuda::ptx::cp_async_bulk_commit_group();
        }
      }
      // Each page is released once waited (a page no warpgroup wrote, m_rows <= 64 or K = 0, too: its
      // writer's wait is then the loader's or none) and once the stores reading it are done.
      bool ok = true;
      if (two) {
        cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});  // warpgroup 1's stores read
        __syncwarp();
        if (c.lane == 0) {
          ok = page_wait_lane(c, b_lid(d.last));
          if (ok) page_finish(c, b_lid(d.last));
        }
        if (!warp_ok(c, ok)) return;
      }
      cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
      __syncwarp();
      if (c.lane == 0) {
        ok = page_wait_lane(c, kEpiLid) && (two || page_wait_lane(c, b_lid(d.last)));
        if (ok) {
          page_finish(c, kEpiLid);
          if (!two) page_finish(c, b_lid(d.last));
        }
      }
      if (!warp_ok(c, ok)) return;
    }
    store_done(c);
  }
};

using Gemm = GemmT<>;  // plain A @ B

}  // namespace mk
