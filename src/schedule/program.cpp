// Packed tables (seed §07) and the save_schedule text of a Program.
#include <cstring>
#include "ir/strings.h"

#include "schedule/program.h"

namespace mk {

int64_t Program::waves() const {
  const int64_t n = static_cast<int64_t>(instructions.size()), s = profile.num_sms;
  return (n + s - 1) / s;
}

std::vector<int32_t> Program::table_per_sm() const {
  // Instruction i runs on SM i % #SMs in iteration i / #SMs; empty slots stay 0 (Noop).
  std::vector<int32_t> t(static_cast<size_t>(waves()) * profile.num_sms * kInstructionWords, 0);
  std::memcpy(t.data(), instructions.data(), instructions.size() * sizeof(Instruction));
  return t;
}

std::vector<int32_t> Program::table_global() const {
  std::vector<int32_t> t(instructions.size() * kInstructionWords);
  if (global_order.empty()) {
    std::memcpy(t.data(), instructions.data(), instructions.size() * sizeof(Instruction));
    return t;
  }
  for (size_t r = 0; r < global_order.size(); ++r)
    std::memcpy(t.data() + r * kInstructionWords, &instructions[global_order[r]], sizeof(Instruction));
  return t;
}

int64_t Program::global_row(int64_t instruction) const {
  if (global_order.empty()) return instruction;
  for (size_t r = 0; r < global_order.size(); ++r)
    if (global_order[r] == instruction) return static_cast<int64_t>(r);
  return instruction;
}

std::string format_schedule(const Program& p) {
  StrBuf os;
  os << "# " << p.name << ": " << p.instructions.size() << " instructions, " << p.barriers.size() << " barriers, "
     << p.slots.size() << " tensor slots, " << p.icodes.size() << " icodes; profile " << p.profile.name << " ("
     << p.profile.num_sms << " SMs), cluster " << p.cluster_size << "\n";
  os << "# tensors\n";
  for (size_t s = 0; s < p.slots.size(); ++s) os << "T" << s << " " << p.slots[s].str() << "\n";
  os << "# icodes\n";
  for (size_t k = 0; k < p.icodes.size(); ++k) os << k << " " << p.icodes[k]->str() << "\n";
  os << "# instructions: index sm.iter node icode | src tensors | dst tensors | indices | wait input | wait reuse | "
        "arrive\n";
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    const int n = p.instruction_node[i];
    os << i << " " << i % p.profile.num_sms << "." << i / p.profile.num_sms << " "
       << (n >= 0 ? p.nodes[n].name : std::string("(pad)")) << " " << in.icode;
    if (n < 0) {
      os << " Noop\n";
      continue;
    }
    const NodeSchedule& ns = p.nodes[n];
    os << " |";
    for (size_t k = 0; k < ns.src_slots.size(); ++k) os << " T" << in.src_slot(static_cast<int>(k));
    os << " |";
    for (size_t k = 0; k < ns.dst_slots.size(); ++k) os << " T" << in.dst_slot(static_cast<int>(k));
    os << " |";
    for (int k = 0; k < kMaxIndices; ++k) os << " " << in.indices[k];
    os << " |";
    for (int k = 0; k < in.num_src_input; ++k) os << " b" << in.src_barriers[k] << ">=" << in.src_targets[k];
    os << " |";
    for (int k = in.num_src_input; k < in.num_src_barriers(); ++k)
      os << " b" << in.src_barriers[k] << ">=" << in.src_targets[k];
    os << " |";
    for (int k = 0; k < in.num_dst_barriers(); ++k) os << " b" << in.dst_barriers[k];
    os << "\n";
  }
  return os.str();
}

}  // namespace mk
