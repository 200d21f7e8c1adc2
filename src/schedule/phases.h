// Internal state handed from one scheduler phase to the next (seed §04). Each phase is a free
// function in its own file; pipeline.cpp runs them in order.
#pragma once
#include <optional>
#include <vector>

#include "schedule/program.h"

namespace mk {

// A WAR/WAW hazard on a reused slot (seed §04 Phase 2): every instruction of `arrivers` that writes or
// reads the slot's old tensor (output `old_output` of DAG node `old_node`) must finish before any
// instruction of `waiter` stores. The others need not arrive (phase 3): a Cat instruction reads one of
// its inputs, so it arrives for that input's slot alone.
struct ReuseEvent {
  int waiter = -1;              // index into Program::nodes
  std::vector<int> arrivers;    // indices into Program::nodes
  int slot = -1;
  int old_node = -1, old_output = -1;  // DAG ids of the old tensor
};

struct ScheduleState {
  ScheduleState(const DAG& d, const ScheduleOptions& o) : dag(d), opt(o) {}
  const DAG& dag;
  ScheduleOptions opt;
  Program prog;
  std::vector<int> sched_of;                 // DAG node id -> index into prog.nodes, or -1
  std::vector<NodeInfo> infos;               // per scheduled node
  std::vector<std::vector<InstrDesc>> descs; // per scheduled node, one per (unpadded) instruction
  std::vector<std::vector<int>> out_slot;    // per DAG node, per output -> slot
  std::vector<ReuseEvent> reuse_events;
  // Per global instruction index, filled by phase 3.
  struct Barriers {
    // (barrier, target); src_late: input barriers only late inputs need (IType::late_input)
    std::vector<std::pair<int, int>> src_input, src_late, src_reuse;
    std::vector<int> dst_input, dst_reuse;
  };
  std::vector<Barriers> barriers;
};

// Phase 0 (before the seed's four): the DAG with every Gemm that Gemm::split_k cuts along K replaced by
// a chain of Gemms, each adding the previous one's output as its bias (src/schedule/phase0_split_k.cpp);
// nullopt when no Gemm splits (the DAG is used as it is).
std::optional<DAG> phase0_split_k(const DAG&, const ScheduleOptions&);
void phase1_count_and_place(ScheduleState&);
// Per DAG node: the N of every Gemm (not swiglu: its tiles have one width) reading the same rows of A
// as it (any K range), when there are several (NodeInfo::gemm_group_n); empty otherwise.
std::vector<std::vector<int64_t>> gemm_groups(const DAG&);
// Compute node `n` as its IType sees it (phase 1's NodeInfo).
NodeInfo node_info(const DAG&, const Node& n, const ScheduleOptions&, std::vector<int64_t> group_n);
void phase2_assign_slots(ScheduleState&);
void phase3_barriers(ScheduleState&);
void phase4_emit(ScheduleState&);

}  // namespace mk
