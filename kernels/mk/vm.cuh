// The persistent interpreter (seed §08-§11 on Hopper, DESIGN §6). One CTA per SM, 384 threads:
// warps 0-7 consumers, 8 controller, 9 loader, 10 storer, 11 spare (the Gemm's second loader, [Note: two
// loaders]). Two instruction stages, seven 32 KB pages renamed through lid_release_order, per-instruction
// mbarriers, global counters with epoch-scaled targets, and a %globaltimer watchdog on every spin loop.
//
// Before including this header the generated source defines MK_CLUSTER_SIZE, MK_NUM_SLOTS,
// MK_NUM_XMAPS (the number of 128B-swizzled 64x64 tile maps of the slots that a Gemm or an
// Attention touches; src/runtime/codegen.h XmapPlan) and MK_MAPS_IN_GLOBAL ([Note: tile maps]).
#pragma once
#include <cuda_bf16.h>

#include "mk/ptx.cuh"

#ifndef MK_CLUSTER_SIZE
#define MK_CLUSTER_SIZE 1
#endif
#ifndef MK_NUM_SLOTS
#define MK_NUM_SLOTS 1
#endif
#ifndef MK_NUM_XMAPS
#define MK_NUM_XMAPS 1
#endif
#ifndef MK_MAPS_IN_GLOBAL
#define MK_MAPS_IN_GLOBAL 0
#endif

namespace mk {

using u32 = cuda::std::uint32_t;
using u64 = cuda::std::uint64_t;
using i32 = cuda::std::int32_t;

constexpr int kClusterSize = MK_CLUSTER_SIZE;
constexpr int kThreads = 384;
constexpr int kNumPages = 7;
constexpr int kPageBytes = 32768;
constexpr int kDynamicSmem = kNumPages * kPageBytes + 1024;  // 230,400 B: pages + 1 KB alignment
constexpr int kMaxSemaphores = 32;
constexpr int kConsumerWarps = 8;
// Named barrier of the 8 consumer warps (0 is __syncthreads). They run one instruction at a time, so
// every IType's consumers may use it (mk/simt.cuh, rms_norm.cuh [Note: rms spread]).
constexpr int kConsumerBarrier = 1;
constexpr int kControllerWarp = 8, kLoaderWarp = 9, kStorerWarp = 10, kSpareWarp = 11;
constexpr int kWorkerWarps = 11;  // every warp except the controller arrives on instruction_finished
// setmaxnreg split (DESIGN §6): the consumer warpgroups own the wgmma accumulators (Attention with
// D = 128 and 128-key blocks needs ~200 registers), warpgroup 2 (controller, loader, storer, spare)
// keeps 72: 216 * 256 + 72 * 128 = 64,512 of the 65,536 (232/40 spilled in elementwise loaders and
// storers). MK_CONSUMER_REGS=0 keeps the launch bound's 168 for every warp.
#ifndef MK_CONSUMER_REGS
#define MK_CONSUMER_REGS 216
#endif
// [Note: gemm multicast] (kernels/mk/itypes/gemm.cuh): 1 turns the B multicast of cluster pairs on
// (MEGAKITTENS_DEFINES=MK_GEMM_MULTICAST=1). Off by default: it halves B's L2 reads but slows the k-step
// from 0.80 to 1.00 us at 8192^3 (benchmarks/notes.md "Session 10": the pair's coupled refills).
#ifndef MK_GEMM_MULTICAST
#define MK_GEMM_MULTICAST 0
#endif
// Gemm consumers hand a stage back as soon as its own wgmma completes (wait_group 0) instead of after
// the next k-tile's wgmma is issued (wait_group 1): one more stage in flight; the other warpgroup's
// wgmma keeps the tensor core busy meanwhile. 2 (default): every tile, 1: tiles of <= 128 columns only,
// 0: never. H200, 2026-12-02 (benchmarks/notes.md Session 17): consumer 0's full-stage waits 43 -> 15% of
// the k132 mainloop, 8192^3 0.89-0.93 -> 0.92-0.94x cuBLAS, 4096^3 0.88 -> 0.89.
#ifndef MK_GEMM_EARLY_RELEASE
#define MK_GEMM_EARLY_RELEASE 2
#endif
#ifndef MK_OTHER_REGS
#define MK_OTHER_REGS 72
#endif
// [Note: fetch ahead] (interpreter.cuh) 1 (default): the controller claims (global queue) and loads the
// next instruction's words before it waits for the stage; 0: after (the A/B switch for
// benchmarks/timeline.py and run.py memory).
#ifndef MK_FETCH_AHEAD
#define MK_FETCH_AHEAD 1
#endif
// [Note: release lanes] (release_dst): 1 (default) releases the dst barriers from lanes 0..n-1 at once;
// 0: lane 0 one after the other (the A/B switch).
#ifndef MK_RELEASE_LANES
#define MK_RELEASE_LANES 1
#endif

// Instruction word offsets (docs/instruction.md).
constexpr int kWIcode = 0, kWSrcTensors = 1, kWDstTensors = 5, kWSrcSlotB9 = 6, kWIndices = 7, kWSrcBarriers = 23,
              kWSrcTargets = 39, kWCounts = 55, kWDstBarriers = 56;
// The icode is w0's low 16 bits ([Note: slot bits] in src/schedule/instruction.h).
__device__ __forceinline__ int icode_of(i32 w0) { return w0 & 0xffff; }

// [Note: diagnostic record] written once per launch by the first watchdog that fires, into
// mapped host memory; src/runtime/launch.cpp reads the same layout.
struct Diag {
  i32 flag;         // 1 once the record is complete
  i32 site;         // 1 input barrier, 2 reuse barrier, 3 mbarrier (pipeline), 4 instruction slot
  i32 sm, cta, warp, lane;
  i32 instruction;  // global instruction index (-1: none)
  i32 icode;
  i32 barrier;      // global barrier id, or the mbarrier's role id for site 3/4
  i32 value;        // observed counter value (or parity)
  i32 target;       // value waited for (epoch-scaled)
  i32 epoch;
  long long waited_ns;
};

// Host-written kernel parameter, head part (128 B). The host packs the same layout
// (src/runtime/launch.cpp); static_asserts below pin it.
struct Common {
  const i32* instructions;   // per-SM [waves, num_ctas, 64] or global [N, 64]
  i32* barriers;             // [num_barriers], epoch-scaled
  u32* queue;                // [1] global work-queue counter, epoch-scaled
  i32* abort_flag;           // device memory: nonzero = every loop exits
  Diag* diag;                // mapped host memory
  u64 timeout_ns;            // watchdog (0 = off)
  i32 epoch;                 // launch number since the last reset, >= 1
  i32 num_instructions;
  i32 waves;                 // per-SM table depth
  i32 global_queue;          // 0 per-SM table, 1 global queue
  i32 num_ctas;              // grid size the per-SM table was built for
  u32 queue_base;            // queue counter value at this launch's start (global mode)
  u64 timeline;              // [N, kTimelineWords] u64 event times, 0 = off ([Note: timeline])
  u64 maps;                  // MK_MAPS_IN_GLOBAL: device copy of maps[NSLOTS] then xmaps ([Note: tile maps])
  i32 pad_[10];
};
static_assert(sizeof(Common) == 128, "Common is the 128-byte head of the kernel parameter");

struct alignas(64) TensorMap { u64 words[16]; };  // CUtensorMap, 128 B

struct SlotDesc {
  u64 ptr;
  i32 dims[4];  // padded (b, d, r, c)
  i32 flags;    // bit 0: maps[slot] holds a valid 128x128 bf16 tile map; bits 1, 2, 3: the slot's xmaps
                // include the wide row maps and the split ones, and the strided one (itypes/gemm.cuh [Note:
                // gemm wide boxes], src/runtime/codegen.h XmapPlan); bits 8-15: the dtype
  i32 xmap;     // index into xmaps of this slot's 64x64 128B-swizzled bf16 tile map(s), -1 none
};
static_assert(sizeof(SlotDesc) == 32, "SlotDesc layout is shared with the host");

// [Note: tile maps] The kernel parameter (at most 32,764 bytes) holds Common, then per slot a
// 128x128 tile map (elementwise bodies) and a SlotDesc, then the 64x64 swizzled xmaps: 160 B a slot
// plus 128 B an xmap. A larger program (a 16-layer Llama: ~220 slots, ~130 xmaps) keeps only Common
// and the SlotDescs there (MK_MAPS_IN_GLOBAL = 1) and reads the maps from a device buffer that the host
// rewrites between launches when the slot pointers change. A tensor map written by the host in global
// memory must be fenced into the tensormap proxy by each thread that issues TMA with it (CUDA
// Programming Guide, "Using TMA to transfer multi-dimensional arrays"): the loader and storer lanes
// fence each map once per launch, tracked in a shared bitmask. Layout shared with
// src/runtime/launch.cpp (ParamLayout): xmaps start at the next 64-byte boundary after slots.
#if MK_MAPS_IN_GLOBAL
template <int NSLOTS, int NXMAPS = 1>
struct GlobalsT {
  Common c;
  SlotDesc slots[NSLOTS];
};
#else
template <int NSLOTS, int NXMAPS = 1>
struct GlobalsT {
  Common c;
  TensorMap maps[NSLOTS];
  SlotDesc slots[NSLOTS];
  TensorMap xmaps[NXMAPS];  // 64x64 box, 128-byte swizzle (Gemm / Attention operands and outputs)
};
#endif
constexpr int kNumMaps = MK_NUM_SLOTS + MK_NUM_XMAPS;
// At most 48 words (1,536 maps) of fence bits: the static shared memory left beside the pages is ~420 B
// (Shared is ~1.6 KB without them); a map past them is fenced on every use, as the second loader does.
constexpr int kMapFenceWords = MK_MAPS_IN_GLOBAL ? ((kNumMaps + 31) / 32 < 48 ? (kNumMaps + 31) / 32 : 48) : 1;
using Globals = GlobalsT<MK_NUM_SLOTS, MK_NUM_XMAPS>;

// One decoded instruction and its per-instruction state (seed §08).
// [Note: stage scratch] An instruction's semaphores are sems[0, num_semaphores); the controller
// invalidates them before it reuses the stage, so the words past them are plain shared memory that the
// instruction owns from its publish to its finish: an IType may use them as scratch (Ctx::scratch).
struct alignas(16) Stage {  // 16-byte aligned: Ctx::scratch is read as float4
  i32 pid[8];              // physical page of each logical page
  u64 sems[kMaxSemaphores];
  i32 num_sems;
  i32 index;               // global instruction index, -1 = stop
  i32 pad_[2];
};

// [Note: word ring] an instruction's 64 words live in words[iter % 3], not in its stage: the controller
// writes iteration i's words while instruction i - 2 still holds the stage (the last reader of
// words[i % 3], instruction i - 3, finished before i - 1 was published), so only the page ids, the
// semaphore inits and the arrive remain between the stage coming free and the publish.
struct Shared {
  alignas(16) i32 words[3][64];  // written as 16-byte vectors ([Note: one stage writer])
  Stage stages[2];
  u64 inst_arrived[2];
  u64 inst_finished[2];
  u64 page_finished[kNumPages];
  u32 page_count[kNumPages];  // finishes of each page so far ([Note: page counts])
  u64 claim_arrived[2];    // cluster 2: rank 0 forwards its claim (global queue) and its page renaming
  u32 claim[2];
  i32 claim_pid[2][8];     // [Note: cluster page renaming]
  u32 map_fenced[2][kMapFenceWords];  // MK_MAPS_IN_GLOBAL: maps the loader (0) / storer (1) lane fenced
  u64 t_entry, t_ready;    // [Note: timeline] kEvCtaEntry / kEvCtaReady (written only with a timeline)
  // The weight row the last RMSNorm left in its weight page (address, C, page id, iteration), written by
  // whichever loader warp loaded it: the next instruction with the same weight in the same page reads it
  // in place (rms_norm.cuh [Note: resident weight]).
  u64 kept_ptr;
  i32 kept_c, kept_pid, kept_iter;
};
// 227 KB of shared memory per block on sm_90 (CUDA C++ Programming Guide, compute capability 9.0 table).
static_assert(sizeof(Shared) + kDynamicSmem <= 232448, "static + dynamic shared memory exceeds 227 KB");

// What a role function sees of one instruction.
struct Ctx {
  const Globals* g;
  Shared* sh;
  Stage* st;
  unsigned char* pages;    // 1024-B aligned, kNumPages * kPageBytes
  int iter;                // per-CTA instruction count (page parities)
  int warp, lane;
  bool aborted;
  bool finished_early;     // the storer handed the stage back before its stores completed
  const i32* words = nullptr;  // this iteration's instruction words ([Note: word ring])
  int index = -1;          // this role's current instruction (st->index may already name the next one
                           // once the storer has handed the stage back)

  __device__ const i32* inst() const { return words; }
  __device__ int icode() const { return icode_of(words[kWIcode]); }
  __device__ const i32* idx() const { return words + kWIndices; }
  // [Note: slot bits] in src/schedule/instruction.h: an input slot's bit 8 sits in w0's upper half, its
  // bit 9 in w6's.
  __device__ int src_slot(int k) const {
    return ((words[kWSrcTensors + k / 4] >> (8 * (k % 4))) & 0xff) | (((words[kWIcode] >> (16 + k)) & 1) << 8) |
           (((words[kWSrcSlotB9] >> (16 + k)) & 1) << 9);
  }
  __device__ int dst_slot(int k) const { return (words[kWDstTensors + k / 2] >> (16 * (k % 2))) & 0xffff; }
  __device__ int count_byte(int k) const { return (words[kWCounts] >> (8 * k)) & 0xff; }
  __device__ int num_src_input() const { return count_byte(0); }
  __device__ int num_src_reuse() const { return count_byte(1); }
  __device__ int num_src_late() const { return count_byte(3); }
  __device__ int num_dst() const { return (count_byte(2) & 15) + (count_byte(2) >> 4); }
  __device__ unsigned char* page(int lid) const { return pages + st->pid[lid] * kPageBytes; }
  __device__ u64* sem(int i) const { return &st->sems[i]; }
  // [Note: stage scratch]: the words of sems[first, kMaxSemaphores) as floats (16-byte aligned for even
  // `first`); first >= the IType's num_semaphores.
  __device__ float* scratch(int first) const { return reinterpret_cast<float*>(&st->sems[first]); }
  // The slot's 128x128 tile map, and its k-th 64x64 swizzled map, for TMA issued by lane 0 of the loader
  // or storer warp: that lane owns its role's fence bitmask (other lanes get the address unfenced; a copy
  // from another lane takes its map from xmap_lane below).
  __device__ const TensorMap* map(int slot) const { return tensor_map(slot); }
  __device__ const TensorMap* xmap(int slot, int k = 0) const { return tensor_map(MK_NUM_SLOTS + g->slots[slot].xmap + k); }
  __device__ const TensorMap* tensor_map(int i) const {
#if MK_MAPS_IN_GLOBAL
    const TensorMap* m = reinterpret_cast<const TensorMap*>(g->c.maps) + i;
    // The second loader ([Note: two loaders]) keeps no bitmask: it fences on every call, as every lane 0
    // does for a map past the bitmask (kMapFenceWords).
    const bool tracked = warp != kSpareWarp && i < kMapFenceWords * 32;
    u32* word = tracked ? &sh->map_fenced[warp == kLoaderWarp ? 0 : 1][i / 32] : nullptr;
    if (lane == 0 && (!tracked || !(*word & (1u << (i % 32))))) {
      cuda::ptx::fence_proxy_tensormap_generic(cuda::ptx::sem_acquire, cuda::ptx::scope_sys, m, cuda::ptx::n32_t<128>{});
      if (tracked) *word |= 1u << (i % 32);
    }
    return m;
#else
    return i < MK_NUM_SLOTS ? &g->maps[i] : &g->xmaps[i - MK_NUM_SLOTS];
#endif
  }
  // Extra map k of `slot` for TMA copies issued by the calling lane, whichever it is (itypes/gemm.cuh
  // [Note: gemm copies per lane]): under MK_MAPS_IN_GLOBAL the lane fences the map itself, on every call
  // (tensor_map's once-per-kernel bookkeeping is lane 0's).
  __device__ const TensorMap* xmap_lane(int slot, int k = 0) const {
    const int i = MK_NUM_SLOTS + g->slots[slot].xmap + k;
#if MK_MAPS_IN_GLOBAL
    const TensorMap* m = reinterpret_cast<const TensorMap*>(g->c.maps) + i;
    cuda::ptx::fence_proxy_tensormap_generic(cuda::ptx::sem_acquire, cuda::ptx::scope_sys, m, cuda::ptx::n32_t<128>{});
    return m;
#else
    return &g->xmaps[i - MK_NUM_SLOTS];
#endif
  }
  // Wide map k of `slot` ([Note: gemm wide boxes]; 0: 64 x 128 rows, 1: split, 2 column blocks, 2: split,
  // 4 blocks, 3: 64 x 256 rows), for the calling lane.
  __device__ const TensorMap* xmap_wide_lane(int slot, int k) const {
    return xmap_lane(slot, ((g->slots[slot].flags & 8) ? 2 : 1) + k);
  }
  __device__ const SlotDesc& slot(int s) const { return g->slots[s]; }
};

// [Note: timeline] With Common::timeline set, lane 0 of each role writes %globaltimer (ns) at fixed
// points of every instruction into row `index` (benchmarks/timeline.py reads it): where an
// instruction's time goes (waiting on inputs, loads in flight, compute, stores) without a profiler.
// Off (timeline == 0) it costs one uniform branch per event.
enum TimelineEvent {
  kEvPublish, kEvLoadBegin, kEvInputsReady, kEvLoadEnd, kEvComputeBegin, kEvComputeEnd,
  kEvStoreBegin, kEvReuseReady, kEvHandBack, kEvStoreComplete, kEvStoreEnd, kEvSm,
  kEvFlags,  // a value, not a time: IType-specific (Gemm: 1 = B multicast across the cluster pair)
  // Gemm only: the loader issued k-tile 0; consumer 0 saw k-tile 0 land; its mainloop's last wgmma done.
  kEvFirstIssue, kEvFirstFull, kEvMainloopEnd,
  kEvEpilogueReady,  // Gemm: consumer 0 has its epilogue page and its late inputs (bias)
  // The CTA's first instruction only: its entry into the kernel and the end of its prologue (barrier
  // inits, the CTA/cluster barrier and PDL's griddepcontrol.wait): what the launch costs before work.
  kEvCtaEntry, kEvCtaReady,
  // Gemm under MK_GEMM_WAIT_STATS (values in SM cycles, itypes/gemm.cuh [Note: gemm wait stats]):
  // consumer 0's mainloop and its part spent waiting for full stages; the loader's waits for empty ones.
  // Attention uses the first two for its loop and its K / V waits (itypes/attention.cuh [Note: attention
  // wait stats], MK_ATTN_WAIT_STATS), and these for the rest of the loop's parts:
  kEvMainloopCycles, kEvFullWaitCycles, kEvEmptyWaitCycles,
  kEvAttnTurnWait, kEvAttnIssue, kEvAttnSWait, kEvAttnSoftmax, kEvAttnPvWait,
  kTimelineWords = 27
};
// A Gemm under MK_GEMM_WAIT_STATS reuses three of attention's words ([Note: gemm turn stats]): consumer 0's
// full-stage waits over k-tiles 1-3 (cycles); the time the storer's drain had freed the pages the next
// instruction's k-tile 0 takes, and the time that instruction's loader had them (%globaltimer, ns).
constexpr int kEvGemmHeadWaitCycles = kEvAttnTurnWait, kEvGemmDrainHead = kEvAttnIssue, kEvGemmPagesKt0 = kEvAttnSWait;
// Lane 0 writes `at` as event `ev` of this instruction's timeline row: a %globaltimer time (ns), or the
// value of kEvSm, kEvFlags and the events from kEvCtaEntry on. mark() reads the time itself.
__device__ __forceinline__ void mark_value(const Ctx& c, int ev, u64 at) {
  const u64 t = c.g->c.timeline;
  // Static-queue padding rows (index >= N, Noops filling the last wave) have no timeline row.
  if (t == 0 || c.lane != 0 || c.index < 0 || c.index >= c.g->c.num_instructions) return;
  reinterpret_cast<u64*>(t)[static_cast<long long>(c.index) * kTimelineWords + ev] = at;
}
__device__ __forceinline__ void mark(const Ctx& c, int ev, u64 value = 0) {
  if (c.g->c.timeline == 0) return;
  mark_value(c, ev, ev == kEvSm || ev == kEvFlags || ev >= kEvCtaEntry ? value : ptx::globaltimer());
}

// ---- watchdog ----

struct Watch {
  u64 start = 0;
  u32 spins = 0;
};
// try_wait returns as soon as the phase completes; the watchdog (a global load and a timer read)
// runs only every 64 spins so that it stays off the hand-off latency.
constexpr u32 kWatchEvery = 63;

__device__ __forceinline__ bool abort_raised(const Ctx& c) {
  return ptx::ld_volatile(c.g->c.abort_flag) != 0;
}

// Records the first failure of this launch (later ones only see the abort flag) and raises the
// abort flag that every spin loop polls. Inlined (a cold path): a call would make ptxas ignore the
// setmaxnreg register split (C7507, "to maintain minimum register requirements" of the callee ABI).
// The diagnostic record and then its flag, which the host reads ([Note: diagnostic record]); by the one lane
// that won its CAS (raise_abort's on the abort flag, report_data_error's on kDataErrorWord).
__device__ __forceinline__ void write_diag(Ctx& c, int site, int barrier, int value, int target, long long waited_ns) {
  volatile Diag* d = c.g->c.diag;
  d->site = site;
  d->sm = static_cast<i32>(ptx::smid());
  d->cta = static_cast<i32>(blockIdx.x);
  d->warp = c.warp;
  d->lane = c.lane;
  d->instruction = c.index;
  d->icode = c.words ? icode_of(c.words[kWIcode]) : -1;
  d->barrier = barrier;
  d->value = value;
  d->target = target;
  d->epoch = c.g->c.epoch;
  d->waited_ns = waited_ns;
  __threadfence_system();
  d->flag = 1;
  __threadfence_system();
}
__device__ __forceinline__ void raise_abort(Ctx& c, int site, int barrier, int value, int target, long long waited_ns) {
  if (atomicCAS(c.g->c.abort_flag, 0, 1) == 0) write_diag(c, site, barrier, value, target, waited_ns);
  c.aborted = true;
}

// Called in the slow path of every spin loop. Returns false when the loop must give up: another
// warp raised the abort flag, or this wait ran past the timeout (then this lane reports first).
__device__ __forceinline__ bool watchdog_ok(Ctx& c, Watch& w, int site, int barrier, int value, int target) {
  if (abort_raised(c)) { c.aborted = true; return false; }
  const u64 now = ptx::globaltimer();
  if (w.start == 0) { w.start = now; return true; }
  const u64 timeout = c.g->c.timeout_ns;
  if (timeout == 0 || now - w.start < timeout) return true;
  raise_abort(c, site, barrier, value, target, static_cast<long long>(now - w.start));
  return false;
}

// Warp-uniform wait for the phase of `bar` with parity `parity`: lane 0 spins under the watchdog,
// then every lane observes the completed phase itself (acquire). False on abort.
// [Note: reconverge after a wait] The other lanes' poll loop diverges the warp (lane 0 leaves it at
// once), and nothing made the code after the wait run converged: RMSNorm's consumer loop written as
// `ok = wait(a) && wait(b)` instead of two early returns ran its row loops twice as long (compute 2.3 ->
// 4.8 us per instruction, 80 -> 60% of copy bandwidth; benchmarks/notes.md session 13), identical
// loops in the SASS; with this closing __syncwarp the same code ran at full speed again. So every caller
// continues converged, whatever its control flow compiles to.
__device__ __forceinline__ bool warp_ok(Ctx& c, bool ok) {
  __syncwarp();  // orders lane 0's acquire before the other lanes' later accesses
  ok = __shfl_sync(0xffffffffu, ok ? 1 : 0, 0) != 0;
  if (!ok) c.aborted = true;
  return ok;
}

__device__ __forceinline__ bool wait(Ctx& c, u64* bar, u32 parity, int site = 3, int id = 0) {
  bool ok = true;
  if (c.lane == 0 && !cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
    Watch w;
    while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity))
      if ((++w.spins & kWatchEvery) == 0 && !watchdog_ok(c, w, site, id, static_cast<int>(parity), -1)) {
        ok = false;
        break;
      }
  }
  if (!warp_ok(c, ok)) return false;
  if (c.lane != 0) while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {}
  __syncwarp();  // [Note: reconverge after a wait]
  return true;
}

// Single-thread wait (no warp collectives), used where only one lane takes part. Cluster: acquire at
// cluster scope, so that arrivals from the peer CTA (release.cluster) order before what follows.
template <bool Cluster = false>
__device__ __forceinline__ bool wait_lane(Ctx& c, u64* bar, u32 parity, int site, int id) {
  const auto done = [&] {
    if constexpr (Cluster)
      return cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, bar, parity);
    else
      return cuda::ptx::mbarrier_try_wait_parity(bar, parity);
  };
  if (done()) return true;
  Watch w;
  while (!done())
    if ((++w.spins & kWatchEvery) == 0 && !watchdog_ok(c, w, site, id, static_cast<int>(parity), -1)) return false;
  return true;
}

__device__ __forceinline__ bool wait_cluster(Ctx& c, u64* bar, u32 parity, int site, int id) {
  bool ok = true;
  if (c.lane == 0) {
    Watch w;
    while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, bar, parity))
      if ((++w.spins & kWatchEvery) == 0 && !watchdog_ok(c, w, site, id, static_cast<int>(parity), -1)) {
        ok = false;
        break;
      }
  }
  if (!warp_ok(c, ok)) return false;
  if (c.lane != 0)
    while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, bar, parity)) {}
  __syncwarp();  // [Note: reconverge after a wait]
  return true;
}

__device__ __forceinline__ void arrive(u64* bar) { (void)cuda::ptx::mbarrier_arrive(bar); }

// ---- global barriers (seed §11): acquire spin with backoff, proxy fence before TMA reads ----

// One lane waits on src barriers [first, first+n); epoch-scaled targets. Then the whole warp syncs.
// Barrier k of the instruction's list: its id and the value this launch waits for (epoch-scaled).
struct GlobalBarrier {
  int id, target;
};
__device__ __forceinline__ GlobalBarrier global_barrier(const Ctx& c, int k) {
  const i32* in = c.inst();
  return {in[kWSrcBarriers + k], in[kWSrcTargets + k] * c.g->c.epoch};
}
__device__ __forceinline__ bool wait_global(Ctx& c, int first, int n, int site) {
  bool ok = true;
  if (c.lane == 0) {
    for (int k = first; k < first + n && ok; ++k) {
      const auto [id, target] = global_barrier(c, k);
      const int* p = c.g->c.barriers + id;
      int v = ptx::ld_acquire_gpu(p);
      if (v >= target) continue;
      Watch w;
      u32 backoff = 16;
      while ((v = ptx::ld_acquire_gpu(p)) < target) {
        if ((++w.spins & 15) == 0 && !watchdog_ok(c, w, site, id, v, target)) { ok = false; break; }
        ptx::nanosleep(backoff);
        if (backoff < 256) backoff *= 2;
      }
    }
    // Writes by other SMs' TMA stores (async proxy) must be visible to our TMA loads. Nothing waited on
    // (graph inputs only): nothing to order.
    if (n > 0) cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
    // The loader's input and the storer's reuse waits only: a consumer's or the storer's late-input wait
    // (Gemm bias) would overwrite them.
    if (c.warp >= kConsumerWarps && (site == 1) == (c.warp != kStorerWarp))
      mark(c, site == 1 ? kEvInputsReady : kEvReuseReady);
  }
  return warp_ok(c, ok);
}
__device__ __forceinline__ bool wait_inputs(Ctx& c) { return wait_global(c, 0, c.num_src_input(), 1); }
// The input barriers an instruction's loads need: all but the late ones (docs/instruction.md), whose
// inputs only its compute reads, after a wait_inputs of its own.
__device__ __forceinline__ bool wait_early_inputs(Ctx& c) {
  return wait_global(c, 0, c.num_src_input() - c.num_src_late(), 1);
}
// The late input barriers alone: a consumer that reads late inputs with its own loads (Gemm bias); the
// loader already waited for the others before its TMA loads brought their data in.
__device__ __forceinline__ bool wait_late_inputs(Ctx& c) {
  return wait_global(c, c.num_src_input() - c.num_src_late(), c.num_src_late(), 1);
}
// Whole warp, no waiting: whether every late input barrier is reached already (one acquire load each),
// then with the proxy fence of wait_global, so TMA loads of those inputs may follow.
__device__ __forceinline__ bool late_inputs_ready(Ctx& c) {
  bool ok = true;
  if (c.lane == 0) {
    for (int k = c.num_src_input() - c.num_src_late(); k < c.num_src_input() && ok; ++k) {
      const GlobalBarrier b = global_barrier(c, k);
      ok = ptx::ld_acquire_gpu(c.g->c.barriers + b.id) >= b.target;
    }
    if (ok && c.num_src_late() > 0) cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
  }
  return __shfl_sync(0xffffffffu, ok, 0) != 0;
}
__device__ __forceinline__ bool wait_reuse(Ctx& c) {
  return wait_global(c, c.num_src_input(), c.num_src_reuse(), 2);
}

// [Note: lanes arrive] A worker warp's lanes read the stage and the words; lane 0 alone arrives on
// inst_finished after a __syncwarp, which orders the other lanes' reads before it (PTX ISA, bar.warp.sync:
// "guarantees memory ordering among threads participating in barrier"), so the controller's rewrite of the
// stage is safe. compute-sanitizer racecheck does not follow that edge and reports the rewrite as a race
// once a CTA runs more instructions than there are stages and word slots. MK_LANES_ARRIVE=1 (the default)
// makes every lane arrive (inst_finished counts 32 per worker warp): the edge racecheck follows, so its
// runs are clean (H200, 2026-12-05: relu / add / rms_waves, cat_planes, bhsd_to_bshd), at no measured cost
// (ab_memory, relu and RMSNorm at 16384 x 8192 and 2048 x 2048, both queues: x0.996-1.009 of lane 0 alone;
// benchmarks/notes.md Session 41). MK_LANES_ARRIVE=0 restores lane 0 alone.
#ifndef MK_LANES_ARRIVE
#define MK_LANES_ARRIVE 1
#endif
constexpr u32 kFinishArrivals = MK_LANES_ARRIVE ? 32u : 1u;  // per worker warp

// Storer, whole warp: hand the stage back to the controller (it may refill it with the instruction two
// iterations on at once). After this only registers may describe the instruction: the returned dst
// barrier ids (lanes < n), page ids read before.
struct DstBarriers {
  int n, mine;
};
__device__ __forceinline__ DstBarriers hand_back(Ctx& c) {
  const int n = c.num_dst();
  const DstBarriers b{n, c.lane < n ? c.inst()[kWDstBarriers + c.lane] : 0};
  __syncwarp();
  mark(c, kEvHandBack);
  if (MK_LANES_ARRIVE || c.lane == 0) arrive(&c.sh->inst_finished[c.iter & 1]);  // [Note: lanes arrive]
  c.finished_early = true;
  return b;
}

// Storer, whole warp, after hand_back: wait until this lane's bulk stores have completed, make them
// visible to other SMs' async proxy, and release-add every dst barrier (seed §11: wait_group 0 ->
// fence.proxy.async.global -> release).
__device__ __forceinline__ void release_dst(Ctx& c, DstBarriers b) {
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
  cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
  // The time is read here but written after the releases: a timeline store just before them would be
  // one more write for the release to wait on (Session 25 saw 2-3 us between this mark and the end).
  // The release's MEMBAR.ALL.GPU itself costs ~0.3 us: mlp1024's median release phase 0.64 us against 0.32 us
  // with a relaxed add, no gain in the HF 1B (H100, 2026-12-05; benchmarks/notes.md Session 42).
  const u64 complete = c.g->c.timeline != 0 ? ptx::globaltimer() : 0;
  __syncwarp();
#if MK_RELEASE_LANES
  // [Note: release lanes] Lane k < n releases dst barrier k, all in one warp instruction: one release
  // fence for the warp instead of one per barrier, each waiting for the previous add to be performed
  // (Gemm and Attention instructions of a Llama have up to 5 dst barriers). The warp barrier above orders
  // every lane's completed stores before each lane's release (cumulativity), as it did for lane 0 alone.
  // Not measurably faster: HF 1B 4.96 / 5.02 ms vs 5.06 / 4.95 from lane 0, 8B 6.74 / 6.66 vs 6.78 / 6.77
  // (H200, 2026-12-04, alternating runs in one call; benchmarks/notes.md Session 28).
  if (c.lane < b.n) ptx::red_release_gpu_add(c.g->c.barriers + b.mine, 1);
#else
  for (int k = 0; k < b.n; ++k) {
    const int id = __shfl_sync(0xffffffffu, b.mine, k);
    if (c.lane == 0) ptx::red_release_gpu_add(c.g->c.barriers + id, 1);
  }
#endif
  __syncwarp();
  mark_value(c, kEvStoreComplete, complete);
}

// Storer, whole warp, once this instruction no longer reads shared memory (its pages are finished):
// hand the stage back at once (so the next instructions' loads can start), then complete the stores.
// Generic stores must be followed by __threadfence() before this call.
__device__ __forceinline__ void store_done(Ctx& c) { release_dst(c, hand_back(c)); }

// ---- pages (seed §10) ----

// [Note: page counts] Every instruction finishes each of the 7 pages once, so the instruction of
// iteration i may use a page once it has been finished i times ([Note: page phases]). The parity wait
// alone cannot tell a page two phases behind from one that is ready: that happens when instruction i's
// loader runs before i - 1's (two loader warps, [Note: two loaders]) while i - 2 still finishes pages
// after its hand-back (RMSNorm, [Note: early hand-back]). So a finisher also raises page_count[pid] to
// its iteration + 1 (after its arrive), and a waiter first waits for page_count >= its iteration, then
// for the parity (which then cannot alias; its acquire orders the page's contents).
__device__ __forceinline__ bool page_count_lane(Ctx& c, int lid) {
  const volatile u32* n = &c.sh->page_count[c.st->pid[lid]];
  const u32 need = static_cast<u32>(c.iter);
  if (*n >= need) return true;
  Watch w;
  while (*n < need)
    if ((++w.spins & kWatchEvery) == 0 && !watchdog_ok(c, w, 7, lid, static_cast<int>(*n), static_cast<int>(need)))
      return false;
  return true;
}
__device__ __forceinline__ bool page_wait(Ctx& c, int lid) {
  const bool ok = c.lane != 0 || page_count_lane(c, lid);
  if (!warp_ok(c, ok)) return false;
  return wait(c, &c.sh->page_finished[c.st->pid[lid]], static_cast<u32>(c.iter & 1), 3, 100 + lid);
}
// Single lane: wait until this instruction may write logical page `lid`.
__device__ __forceinline__ bool page_wait_lane(Ctx& c, int lid) {
  return page_count_lane(c, lid) &&
         wait_lane(c, &c.sh->page_finished[c.st->pid[lid]], static_cast<u32>(c.iter & 1), 3, 100 + lid);
}
// One lane: instruction `iter` is done with physical page `pid` ([Note: page counts]).
__device__ __forceinline__ void finish_pid(Shared* sh, int pid, int iter) {
  arrive(&sh->page_finished[pid]);
  atomicMax(&sh->page_count[pid], static_cast<u32>(iter + 1));
}
__device__ __forceinline__ void page_finish(Ctx& c, int lid) { finish_pid(c.sh, c.st->pid[lid], c.iter); }

// Loader, one lane: wait and release at once every lid in [first, last).
__device__ __forceinline__ bool release_unused(Ctx& c, int first, int last = kNumPages) {
  bool ok = true;
  if (c.lane == 0)
    for (int lid = first; lid < last && ok; ++lid) {
      ok = page_wait_lane(c, lid);
      if (ok) page_finish(c, lid);
    }
  return warp_ok(c, ok);
}

// ---- roles, dispatched through the generated switch ----
// Each IType struct provides (the device contract; see kernels/mk/itypes/*.cuh):
//   static constexpr int num_semaphores; static int semaphore_count(int i);
//   static int lid_release_order(int query, const i32* inst);
//   static void load(Ctx&); static void compute(Ctx&); static void store(Ctx&);
// and optionally static constexpr bool kTwoLoaders ([Note: two loaders]).
struct ControllerRole {};
// [Note: two loaders] An IType with `kTwoLoaders = true` (the Gemm) has its odd iterations loaded by the
// spare warp, its even ones by the loader warp: the next instruction's loader waits for its inputs,
// fences its tile maps and issues its first k-tiles while this one's loader still issues the last ones
// (timeline gemm4k: the loader began the next Gemm ~0.6 us before the mainloop ended and took ~2.9 us to
// its first copy, the tensor core idle ~4 us a tile; benchmarks/notes.md Session 17). Attention and
// RMSNorm ([Note: page-wise rows]) too; every other IType keeps one loader warp.
// MK_TWO_LOADERS=0: the loader warp loads everything.
#ifndef MK_TWO_LOADERS
#define MK_TWO_LOADERS 1
#endif
template <class Op>
constexpr bool kTwoLoaders = MK_TWO_LOADERS && requires { requires Op::kTwoLoaders; };
// begin/end: the role's [Note: timeline] events (consumers: warp 0 only); mine: whether this warp runs
// the role of the current instruction.
struct LoaderRole {
  static constexpr int begin = kEvLoadBegin, end = kEvLoadEnd;
  template <class Op> static __device__ __forceinline__ bool mine(const Ctx& c) {
    return (kTwoLoaders<Op> && (c.iter & 1)) == (c.warp == kSpareWarp);
  }
  template <class Op> static __device__ __forceinline__ void run(Ctx& c) { Op::load(c); }
};
struct ConsumerRole {
  static constexpr int begin = kEvComputeBegin, end = kEvComputeEnd;
  template <class Op> static __device__ __forceinline__ bool mine(const Ctx&) { return true; }
  template <class Op> static __device__ __forceinline__ void run(Ctx& c) { Op::compute(c); }
};
struct StorerRole {
  static constexpr int begin = kEvStoreBegin, end = kEvStoreEnd;
  template <class Op> static __device__ __forceinline__ bool mine(const Ctx&) { return true; }
  template <class Op> static __device__ __forceinline__ void run(Ctx& c) { Op::store(c); }
};

}  // namespace mk
