// The controller and worker loops (seed §09) and the kernel body (seed §08). `V` is the generated
// visitor: V::kNumIcodes and V::visit(icode, f) calling f.template operator()<Op>() for icode's IType.
#pragma once
#include "mk/vm.cuh"

namespace mk {

// The device contract of an IType (STYLE practice 2): checked once per icode with a sentence.
template <class Op>
concept DeviceIType = requires(Ctx& c, int i, const i32* inst) {
  Op::num_semaphores;
  Op::semaphore_count(i);
  Op::lid_release_order(i, inst);
  Op::load(c);
  Op::compute(c);
  Op::store(c);
};

// Visitors for V::visit (functors: NVRTC treats unannotated lambdas as host code).
struct ReleaseOrderFn {
  int query;
  const i32* inst;
  int result;
  template <class Op> __device__ __forceinline__ void operator()() { result = Op::lid_release_order(query, inst); }
};
struct InitSemaphoresFn {
  Stage* st;
  int lane;
  int n;
  template <class Op> __device__ __forceinline__ void operator()() {
    static_assert(DeviceIType<Op>, "a device IType (kernels/mk/itypes/) must provide num_semaphores, "
                                   "semaphore_count(i), lid_release_order(q, inst), load(c), compute(c), store(c)");
    static_assert(Op::num_semaphores <= kMaxSemaphores, "an instruction may use at most 32 semaphores");
    n = Op::num_semaphores;
    if (lane == 0)
      for (int i = 0; i < n; ++i) cuda::ptx::mbarrier_init(&st->sems[i], Op::semaphore_count(i));
  }
};
// Runs the role of the instruction if it is this warp's ([Note: two loaders]), between its timeline marks
// (consumer warp 0 and warpgroup 2 only).
template <class Role>
struct RunRoleFn {
  Ctx* c;
  template <class Op> __device__ __forceinline__ void operator()() {
    if (!Role::template mine<Op>(*c)) return;
    const bool marks = c->warp == 0 || c->warp >= kConsumerWarps;
    if (marks) mark(*c, Role::begin);
    Role::template run<Op>(*c);
    if (marks && !c->aborted) mark(*c, Role::end);
  }
};

// [Note: cluster page renaming] Under clusters of 2 both CTAs run instructions of the same node at the
// same iteration; rank 1 takes rank 0's renaming instead of its own (rank 0 sends it with its claim), so
// the two CTAs' lids map to the same physical pages and a Gemm can TMA-multicast into both at one offset
// ([Note: gemm multicast]). Any bijection is correct: each instruction still waits for and releases every
// page once; rank 1 only may wait longer for a page its previous instruction releases late.

// [Note: one stage writer] the lanes load the instruction words, lane 0 writes them all (through shuffles,
// as 16-byte vectors) and, later, the rest of the stage, and publishes it: the lane that arrives on
// inst_arrived made every write, so the release / acquire edge to the workers covers them
// (compute-sanitizer racecheck does not follow a __syncwarp from other writing lanes to one arriving lane).
// Lane l holds words l (w0) and 32 + l (w1).
__device__ __forceinline__ void write_words(i32* words, i32 w0, i32 w1, int lane) {
#pragma unroll 4  // 4 stores in flight, few registers (the full unroll spilled in test_nvrtc elementwise cases)
  for (int q = 0; q < 16; ++q) {  // words 4q..4q+3 sit in lanes 4q % 32 + 0..3, half q / 8
    const i32 wq = q < 8 ? w0 : w1;
    int4 v;
    v.x = __shfl_sync(0xffffffffu, wq, (4 * q) % 32);
    v.y = __shfl_sync(0xffffffffu, wq, (4 * q) % 32 + 1);
    v.z = __shfl_sync(0xffffffffu, wq, (4 * q) % 32 + 2);
    v.w = __shfl_sync(0xffffffffu, wq, (4 * q) % 32 + 3);
    if (lane == 0) reinterpret_cast<int4*>(words)[q] = v;
  }
}

// Loads table row `row`'s words (lane l: words l and 32 + l) and writes them to `words`; returns the lane's
// first word (lane 0: the icode word).
__device__ __forceinline__ i32 fetch_words(const Common& g, long long row, i32* words, int lane) {
  const i32 w0 = g.instructions[row * 64 + lane];
  write_words(words, w0, g.instructions[row * 64 + lane + 32], lane);
  return w0;
}

// Controller (warp 8): rename pages, fetch, recycle the stage, init semaphores, publish.
template <class V>
__device__ void controller(Ctx& c) {
  const Common& g = c.g->c;
  Shared& sh = *c.sh;
  const u32 rank = kClusterSize > 1 ? ptx::cluster_ctarank() : 0u;
  const u32 units = static_cast<u32>(g.num_instructions / kClusterSize);
  const u32 base = g.queue_base;
  // [Note: static first claim] With the global queue, cluster k's first instruction is unit k: no atomic
  // round trip before the first publish (the claims serialise on one L2 line, all CTAs at once). Later
  // claims count from the cluster count on; a cluster whose first unit is past the end claims nothing,
  // so a launch makes exactly `units` claims (src/runtime/launch.cpp queue_base).
  const u32 nclusters = static_cast<u32>(g.num_ctas / kClusterSize);
  const auto claim = [&](int it) -> u32 {
    return it == 0 ? blockIdx.x / kClusterSize : atomicAdd(g.queue, 1u) - base + nclusters;
  };
  for (int iter = 0;; ++iter) {
    const int s = iter & 1;
    Stage& st = sh.stages[s];
    i32* words = sh.words[iter % 3];
    c.st = &st;
    c.words = words;
    c.iter = iter;
    // Rename pages: new lid q takes the page the previous instruction (published, so its words and page
    // ids stay put until this one is) releases q-th (seed §10); rank 1 receives rank 0's renaming below.
    int pid = c.lane;
    if (rank == 0 && iter > 0 && c.lane < kNumPages) {
      const i32* prev = sh.words[(iter + 2) % 3];
      ReleaseOrderFn f{c.lane, prev, c.lane};
      V::visit(icode_of(prev[kWIcode]), f);
      pid = sh.stages[s ^ 1].pid[f.result];
    }
    // [Note: fetch ahead] the next instruction is fetched before the stage is free: the per-SM table's
    // row (iter, cta), or the global queue's next claim. Its words are loaded and written to the ring
    // ([Note: word ring]) first, so the claim's and the words' global round trips and the gather overlap
    // the wait for the stage instead of delaying the publish. A CTA then holds one claimed instruction
    // beyond its two stages; no deadlock: the lowest-index unfinished instruction's inputs and its CTA's
    // earlier instructions all have lower indices, so they are finished and it is published and runs. A
    // cluster fetches after the wait (rank 0's claim buffer is free again only then).
    const bool ahead = MK_FETCH_AHEAD && kClusterSize == 1;
    long long row = !g.global_queue && iter < g.waves ? static_cast<long long>(iter) * g.num_ctas + blockIdx.x : -1;
    i32 w0 = -1;  // lane 0: the icode
    if (ahead) {
      if (g.global_queue) {
        u32 unit = 0;
        if (c.lane == 0) unit = claim(iter);
        unit = __shfl_sync(0xffffffffu, unit, 0);
        if (unit < units) row = unit;
      }
      if (row >= 0) w0 = fetch_words(g, row, words, c.lane);
    }
    if (iter >= 2) {
      if (!wait(c, &sh.inst_finished[s], static_cast<u32>(((iter - 2) >> 1) & 1), 4, 20 + s)) break;
      if (c.lane == 0)
        for (int i = 0; i < st.num_sems; ++i) ptx::mbarrier_inval(&st.sems[i]);
    }
    // Fetch: the next claim of the global queue, or the per-SM row's words when not fetched ahead. Rank 0
    // of a cluster sends rank 1 its claim and its renaming ([Note: cluster page renaming]).
    if (!ahead) {
      u32 unit = 0;
      if (rank == 0) {
        if (g.global_queue && c.lane == 0) unit = claim(iter);
        if constexpr (kClusterSize > 1) {  // lane 0 writes everything, then releases it with its arrive
          for (int q = 0; q < kNumPages; ++q) {
            const int v = __shfl_sync(0xffffffffu, pid, q);
            if (c.lane == 0) ptx::st_cluster(reinterpret_cast<u32*>(&sh.claim_pid[s][q]), 1, static_cast<u32>(v));
          }
          if (c.lane == 0) {
            ptx::st_cluster(&sh.claim[s], 1, unit);
            ptx::mbarrier_arrive_cluster(&sh.claim_arrived[s], 1);
          }
        }
        unit = __shfl_sync(0xffffffffu, unit, 0);
      } else {
        if (!wait_cluster(c, &sh.claim_arrived[s], static_cast<u32>((iter >> 1) & 1), 4, 30 + s)) break;
        unit = sh.claim[s];
        if (c.lane < kNumPages) pid = sh.claim_pid[s][c.lane];
      }
      if (g.global_queue && unit < units) row = unit * kClusterSize + rank;
      if (row >= 0) w0 = fetch_words(g, row, words, c.lane);
    }
    const int index = static_cast<int>(row);  // -1: no more work
    if (c.lane == 0) {
      if (index < 0) words[kWIcode] = -1;
      st.index = index;
    }
    c.index = index;
    int nsem = 0;
    if (index >= 0) {
      const int icode = icode_of(__shfl_sync(0xffffffffu, w0, 0));
      if (icode < 0 || icode >= V::kNumIcodes) {
        if (c.lane == 0) raise_abort(c, 5, -1, icode, V::kNumIcodes, 0);
        break;
      }
      for (int q = 0; q < kNumPages; ++q) {
        const int v = __shfl_sync(0xffffffffu, pid, q);
        if (c.lane == 0) st.pid[q] = v;
      }
      InitSemaphoresFn f{&st, c.lane, 0};
      V::visit(icode, f);
      nsem = f.n;
      // The inits must be visible to TMA (async proxy) completing on these barriers.
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
    }
    if (c.lane == 0) st.num_sems = nsem;
    __syncwarp();
    mark(c, kEvSm, ptx::smid());
    if (iter == 0) {
      mark(c, kEvCtaEntry, sh.t_entry);
      mark(c, kEvCtaReady, sh.t_ready);
    }
    mark(c, kEvPublish);
    if (c.lane == 0) {
      arrive(&sh.inst_arrived[s]);
      if constexpr (kClusterSize > 1) ptx::mbarrier_arrive_cluster(&sh.inst_arrived[s], rank ^ 1u);
    }
    if (index < 0) break;
  }
}

// Every other warp: wait for the stage, run this role of the instruction, report it finished.
template <class V, class Role>
__device__ __forceinline__ void worker_loop(Ctx& c) {
  Shared& sh = *c.sh;
  for (int iter = 0;; ++iter) {
    const int s = iter & 1;
    c.st = &sh.stages[s];
    c.words = sh.words[iter % 3];
    c.iter = iter;
    if (!wait(c, &sh.inst_arrived[s], static_cast<u32>((iter >> 1) & 1), 4, 10 + s)) break;
    if (c.st->index < 0) break;
    c.index = c.st->index;
    c.finished_early = false;
    RunRoleFn<Role> f{&c};
    V::visit(c.icode(), f);
    if (c.aborted) break;
    __syncwarp();
    if ((MK_LANES_ARRIVE || c.lane == 0) && !c.finished_early) arrive(&sh.inst_finished[s]);
  }
}

// The consumers' loop is always inlined: in a large program (a whole Llama) ptxas otherwise kept it a
// separate function, and a wgmma pipeline crossing that call boundary made it serialize every wgmma
// (C7510): each Gemm k-step took ~1520 SM cycles in the 8B model against ~1200 alone (H200, 2026-12-03,
// benchmarks/notes.md Session 19). In such programs the loader's and storer's loops are calls
// (inlining them spilled in warpgroup 2's 72 registers), taking Ctx by value: ptxas had made the
// storer's a call once a program held one more Gemm body, and through a reference run_vm's one Ctx then
// lived in local memory for every role, reloaded by every body (2425 LDL against 246 in an HF layer's
// kernel; every Gemm of the 8B ~9% slower, H200 2026-12-03, benchmarks/notes.md Session 21).
// [Note: role calls] Forced calls only where a Gemm or Attention body is present (MK_ROLE_CALLS, set by
// src/runtime/codegen.cpp): in an RMSNorm program the calls cost 6 us of a 256 MB launch's 154 (RMSNorm
// 16384 x 8192: 82 -> 79% of copy, H200, 2026-12-03, benchmarks/notes.md Session 27); elsewhere ptxas
// chooses, as before Session 21 (it inlines a small program's loops without spilling).
#ifndef MK_ROLE_CALLS
#define MK_ROLE_CALLS 1
#endif
#if MK_ROLE_CALLS
#define MK_ROLE_INLINE __noinline__
#else
#define MK_ROLE_INLINE  // ptxas's choice (it inlines small programs' loops)
#endif
template <class V, class Role>
__device__ MK_ROLE_INLINE void worker(Ctx c) {
  worker_loop<V, Role>(c);
}

template <class V>
__device__ __forceinline__ void run_vm(const Globals& g) {
  __shared__ Shared sh;
  extern __shared__ unsigned char dynamic_smem[];
  // Pages start 1024-byte aligned (128B-swizzled TMA boxes). Offsetting the __shared__ array itself, not
  // a pointer rebuilt from an integer, keeps the shared address space visible to the compiler: page
  // accesses become st/ld.shared, which it may reorder with global loads (an epilogue's bias loads).
  unsigned char* pages = dynamic_smem + ((0u - ptx::smem_addr(dynamic_smem)) & 1023u);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool timed = g.c.timeline != 0;

  if (threadIdx.x == 0) {
    if (timed) sh.t_entry = ptx::globaltimer();
    for (int s = 0; s < 2; ++s) {
      cuda::ptx::mbarrier_init(&sh.inst_arrived[s], kClusterSize);
      cuda::ptx::mbarrier_init(&sh.inst_finished[s], kWorkerWarps * kFinishArrivals);
      cuda::ptx::mbarrier_init(&sh.claim_arrived[s], 1);
      sh.stages[s].num_sems = 0;
      sh.stages[s].index = -1;
    }
    sh.kept_ptr = 0, sh.kept_c = -1, sh.kept_pid = -1, sh.kept_iter = -2;
    // Page tokens start free: initialise, then arrive once (seed §08 step 4).
    for (int p = 0; p < kNumPages; ++p) cuda::ptx::mbarrier_init(&sh.page_finished[p], 1);
    for (int p = 0; p < kNumPages; ++p) arrive(&sh.page_finished[p]), sh.page_count[p] = 0;
    for (int w = 0; w < kMapFenceWords; ++w) sh.map_fenced[0][w] = sh.map_fenced[1][w] = 0;
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  if constexpr (kClusterSize > 1) {
    cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
    cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
  } else {
    __syncthreads();
  }
  ptx::griddep_wait();  // PDL: the previous grid's writes (barriers, outputs) are complete
  if (timed && warp == kControllerWarp && lane == 0) sh.t_ready = ptx::globaltimer();

  Ctx c{&g, &sh, &sh.stages[0], pages, 0, warp, lane, false, false};
  // One if/else over the roles, setmaxnreg first in each branch (warpgroup-uniform: warps 0-7 and 8-11).
  if (warp < kConsumerWarps) {
    if constexpr (MK_CONSUMER_REGS > 0) ptx::setmaxnreg_inc<MK_CONSUMER_REGS>();
    worker_loop<V, ConsumerRole>(c);
  } else {
    if constexpr (MK_CONSUMER_REGS > 0) ptx::setmaxnreg_dec<MK_OTHER_REGS>();
    if (warp == kControllerWarp) controller<V>(c);
    else if (warp == kStorerWarp) worker<V, StorerRole>(c);
    else worker<V, LoaderRole>(c);  // the loader and the spare warp ([Note: two loaders])
  }

  // Neither CTA's shared memory may go away while its peer can still address it.
  if constexpr (kClusterSize > 1) {
    cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
    cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
  }
}

}  // namespace mk
