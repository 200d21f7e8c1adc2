// What the scheduler produces (seed §04): tensor slots, icodes, barriers and the packed instruction
// stream. The GPU runtime and the CPU reference interpreter both execute a Program.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/dag.h"
#include "itypes/itype.h"
#include "schedule/instruction.h"

namespace mk {

struct ScheduleOptions {
  Profile profile = Profile::h200();
  int cluster_size = 2;
  // The seed's icode rule: one icode per (IType, src slots, dst slots) instead of per IType.
  bool icode_per_tensor_tuple = false;
  // Test hook: drop this barrier id from every instruction that waits on it (-1: none).
  int drop_barrier = -1;
  // Test hook: phase 3 cuts every reshape alias into flat runs, never into the common shape
  // ([Note: reshape aliases]); the barriers must come out the same.
  bool flat_aliases = false;
};

// One compute node's place in the instruction list.
struct NodeSchedule {
  int node = -1;               // DAG node id
  std::string name;            // FX node name
  ITypePtr itype;
  int64_t start = 0;           // first instruction index
  int64_t count = 0;           // instructions the IType asked for
  int64_t padded = 0;          // count rounded up to the cluster size
  int icode = 0;
  std::vector<int> src_slots, dst_slots;
  std::vector<int> src_producers;  // DAG node id that wrote each input (for race reports)
  int64_t end() const { return start + padded; }
};

struct BarrierInfo {
  int32_t target = 0;
  int producer = -1;    // index into Program::nodes (input barriers); -1 for reuse barriers
  bool reuse = false;
};

struct Program {
  std::string name;
  Profile profile;
  int cluster_size = 1;
  std::vector<TensorMeta> slots;                    // tensor_metas, <= 256
  std::vector<int> input_slots;                     // runtime argument k lives in slot input_slots[k] (-1: unread)
  std::vector<std::pair<std::string, int>> attr_slots;  // get_attr path -> slot
  std::vector<int> output_slots;                    // graph outputs, in order
  std::vector<TensorRange> output_ranges;           // the view of its slot each output returns
  std::vector<int> slot_producer;                   // DAG node id that first defines each slot
  // [Note: reshape aliases] slot k with slot_base[k] >= 0 owns no memory: it is slot_base[k] seen with
  // its own shape (slots[k]) from element slot_offset[k] on. The runtime binds both to one buffer.
  std::vector<int> slot_base;
  std::vector<int64_t> slot_offset;
  std::vector<ITypePtr> icodes;                     // icodes[0] is Noop
  std::vector<NodeSchedule> nodes;                  // compute nodes, in schedule order
  std::vector<Instruction> instructions;
  std::vector<int> instruction_node;                // index into nodes, -1 for padding Noops
  // [Note: global claim order] Row r of the global queue's table holds instruction global_order[r]
  // (empty: row r = instruction r). Only a node's own range is permuted, so rows stay topological.
  std::vector<int32_t> global_order;
  std::vector<BarrierInfo> barriers;
  std::vector<std::pair<std::string, double>> phase_ms;  // wall time of each phase

  int64_t waves() const;                            // ceil(N / num_sms)
  std::vector<int32_t> table_per_sm() const;        // [waves, num_sms, 64], tail zero-filled (Noop)
  std::vector<int32_t> table_global() const;        // [N, 64], rows in global_order
  int64_t global_row(int64_t instruction) const;    // the global table's row holding `instruction`
};

// Runs the four phases of seed §04 on a validated DAG. Throws CompileError.
Program schedule(const DAG&, const ScheduleOptions&);

// save_schedule: the tensor table, then one line per instruction.
std::string format_schedule(const Program&);

}  // namespace mk
