// Phase 4 (seed §04): assign icodes and pack the 256-byte instructions, Noop-padding each node's
// range to the cluster size. One icode per distinct IType (class + static parameters): tensors are
// addressed by the slots the instruction carries (DESIGN §4). The seed's rule, one icode per
// (IType, src slots, dst slots), is kept behind ScheduleOptions::icode_per_tensor_tuple.
#include <map>

#include "ir/error.h"
#include "schedule/phases.h"

namespace mk {

namespace {

std::string icode_key(const NodeSchedule& ns, bool per_tensor_tuple) {
  std::string key = ns.itype->str();
  if (per_tensor_tuple) {
    key += " src";
    for (int s : ns.src_slots) key += " " + std::to_string(s);
    key += " dst";
    for (int s : ns.dst_slots) key += " " + std::to_string(s);
  }
  return key;
}

}  // namespace

void phase4_emit(ScheduleState& st) {
  Program& prog = st.prog;
  prog.icodes = {std::make_shared<Noop>()};
  std::map<std::string, int> icode_of;
  for (auto& ns : prog.nodes) {
    auto [it, added] = icode_of.try_emplace(icode_key(ns, st.opt.icode_per_tensor_tuple),
                                            static_cast<int>(prog.icodes.size()));
    if (added) prog.icodes.push_back(ns.itype);
    ns.icode = it->second;
  }
  if (prog.icodes.size() > static_cast<size_t>(kMaxIcodes))
    fail("graph '", st.dag.name, "' needs ", prog.icodes.size(), " icodes, at most ", kMaxIcodes,
         " fit an instruction ([Note: slot bits] in src/schedule/instruction.h)");

  const int64_t total = prog.nodes.empty() ? 0 : prog.nodes.back().end();
  prog.instructions.assign(total, Instruction{});
  prog.instruction_node.assign(total, -1);
  for (size_t n = 0; n < prog.nodes.size(); ++n) {
    const NodeSchedule& ns = prog.nodes[n];
    for (int64_t i = 0; i < ns.count; ++i) {
      const int64_t g = ns.start + i;
      Instruction& inst = prog.instructions[g];
      prog.instruction_node[g] = static_cast<int>(n);
      inst.icode = static_cast<uint16_t>(ns.icode);
      for (size_t k = 0; k < ns.src_slots.size(); ++k) inst.set_src_slot(static_cast<int>(k), ns.src_slots[k]);
      for (size_t k = 0; k < ns.dst_slots.size(); ++k) inst.set_dst_slot(static_cast<int>(k), ns.dst_slots[k]);
      const auto& idx = st.descs[n][i].indices;
      std::copy(idx.begin(), idx.end(), inst.indices);

      const auto& b = st.barriers[g];
      const size_t nsrc = b.src_input.size() + b.src_late.size() + b.src_reuse.size(), ndst = b.dst_input.size() + b.dst_reuse.size();
      if (nsrc > kMaxSrcBarriers || ndst > kMaxDstBarriers)
        fail("node '", ns.name, "' (", ns.itype->str(), "), instruction ", g, ": needs ", nsrc, " source and ", ndst,
             " destination barriers, at most ", kMaxSrcBarriers, " and ", kMaxDstBarriers);
      int k = 0;
      for (const auto* list : {&b.src_input, &b.src_late, &b.src_reuse})
        for (const auto& [id, target] : *list) {
          inst.src_barriers[k] = static_cast<uint32_t>(id);
          inst.src_targets[k++] = target;
        }
      k = 0;
      for (const auto* list : {&b.dst_input, &b.dst_reuse})
        for (int id : *list) inst.dst_barriers[k++] = static_cast<uint32_t>(id);
      inst.num_src_input = static_cast<uint8_t>(b.src_input.size() + b.src_late.size());
      inst.num_src_late = static_cast<uint8_t>(b.src_late.size());
      inst.num_src_reuse = static_cast<uint8_t>(b.src_reuse.size());
      inst.num_dst_input = b.dst_input.size() & 15;  // each <= kMaxDstBarriers (checked above)
      inst.num_dst_reuse = b.dst_reuse.size() & 15;
    }
  }
}

}  // namespace mk
