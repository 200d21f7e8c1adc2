// Host memory as the reference interpreter's ITypes see it: slot buffers read and written through
// 4-D boxes, with dtype conversion and (optionally) a shadow tag per element naming its last writer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/exec.h"
#include "reference/interpreter.h"

namespace mk {

// fp32 <-> 16-bit float conversions, round-to-nearest-even, NaN kept quiet (torch's .to() rules).
uint16_t float_to_bf16(float);
float bf16_to_float(uint16_t);
uint16_t float_to_f16(float);
float f16_to_float(uint16_t);

// The ExecContext handed to every IType::execute. Checks each box against the slot shape and, with
// race checks on, that every element a load sees was last written by the producer the consumer's
// node expects for that operand (seed §11: the barriers must make this so in every interleaving).
class SlotMemory final : public ExecContext {
 public:
  SlotMemory(const Program&, const std::vector<SlotBuffer>&, bool check_races);
  void begin(int64_t index);  // the instruction about to execute
  std::vector<float> load(int slot, const Box&) override;
  void store(int slot, const Box&, const std::vector<float>&) override;
  const TensorMeta& meta(int slot) const override;

 private:
  std::string where() const;              // "instruction 12 (node 'relu', ElementwiseUnary(...))"
  std::string writer(int node_id) const;  // "node 3 ('mm')", "never written"
  void check_box(int slot, const Box&, const char* what) const;
  void check_reads(int slot, const Box&) const;
  void* base(int slot) const { return bufs_[slot].data; }

  const Program& p_;
  const std::vector<SlotBuffer>& bufs_;
  bool check_races_;
  std::vector<std::vector<int32_t>> tags_;  // per slot, per element: DAG id of the last writer, -1: none
  // A reshape alias shares its base slot's tags: tags_[tag_slot_[s]] from element tag_off_[s] on.
  std::vector<int> tag_slot_;
  std::vector<int64_t> tag_off_;
  const Instruction* inst_ = nullptr;
  const NodeSchedule* node_ = nullptr;
};

}  // namespace mk
