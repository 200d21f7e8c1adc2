// The 256-byte instruction (seed §06), 64 int32 words. Layout documented in docs/instruction.md.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mk {

constexpr int kMaxSrcTensors = 16, kMaxDstTensors = 8, kMaxIndices = 16;
constexpr int kMaxSrcBarriers = 16, kMaxDstBarriers = 8, kMaxSlots = 256;
constexpr int kInstructionWords = 64;

struct Instruction {
  int32_t icode = 0;                        // w0: 0 = Noop
  uint8_t src_tensors[kMaxSrcTensors]{};    // w1-4: tensor slot per input operand
  uint8_t dst_tensors[kMaxDstTensors]{};    // w5-6: tensor slot per output
  int32_t indices[kMaxIndices]{};           // w7-22: IType-specific (docs/itypes.md)
  uint32_t src_barriers[kMaxSrcBarriers]{}; // w23-38: input barriers first, then reuse barriers
  int32_t src_targets[kMaxSrcBarriers]{};   // w39-54: target of each src barrier
  uint8_t num_src_input = 0;                // w55 byte 0
  uint8_t num_src_reuse = 0;                // w55 byte 1
  uint8_t num_dst_input : 4 = 0;            // w55 byte 2 bits 0-3: dst barriers that consumers' loads wait on
  uint8_t num_dst_reuse : 4 = 0;            // w55 byte 2 bits 4-7: dst barriers that reusers' stores wait on
  // w55 byte 3: the last num_src_late input barriers guard inputs that only the instruction's compute
  // reads, late (IType::late_input: a Gemm's bias); its loads need only the ones before them.
  uint8_t num_src_late = 0;
  uint32_t dst_barriers[kMaxDstBarriers]{}; // w56-63: input-kind first, then reuse-kind; unused = 0

  int num_src_barriers() const { return num_src_input + num_src_reuse; }
  int num_dst_barriers() const { return num_dst_input + num_dst_reuse; }
};
static_assert(sizeof(Instruction) == kInstructionWords * 4, "an instruction is exactly 256 bytes");
static_assert(offsetof(Instruction, indices) == 7 * 4 && offsetof(Instruction, src_barriers) == 23 * 4 &&
                  offsetof(Instruction, src_targets) == 39 * 4 && offsetof(Instruction, num_src_input) == 55 * 4 &&
                  offsetof(Instruction, dst_barriers) == 56 * 4,
              "instruction fields sit at the word offsets of seed §06");

}  // namespace mk
