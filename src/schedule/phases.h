// Internal state handed from one scheduler phase to the next (seed §04). Each phase is a free
// function in its own file; pipeline.cpp runs them in order.
#pragma once
#include <vector>

#include "schedule/program.h"

namespace mk {

// A WAR/WAW hazard on a reused slot (seed §04 Phase 2): every instruction of `arrivers` must finish
// before any instruction of `waiter` stores.
struct ReuseEvent {
  int waiter = -1;              // index into Program::nodes
  std::vector<int> arrivers;    // indices into Program::nodes
  int slot = -1;
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
    std::vector<std::pair<int, int>> src_input, src_reuse;  // (barrier, target)
    std::vector<int> dst_input, dst_reuse;
  };
  std::vector<Barriers> barriers;
};

void phase1_count_and_place(ScheduleState&);
void phase2_assign_slots(ScheduleState&);
void phase3_barriers(ScheduleState&);
void phase4_emit(ScheduleState&);

}  // namespace mk
