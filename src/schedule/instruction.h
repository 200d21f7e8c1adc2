// The 256-byte instruction (seed §06), 64 int32 words. Layout documented in docs/instruction.md.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mk {

constexpr int kMaxSrcTensors = 16, kMaxDstTensors = 3, kMaxIndices = 16;
constexpr int kMaxSrcBarriers = 16, kMaxDstBarriers = 8, kMaxSlots = 1016, kMaxIcodes = 1 << 16;
constexpr int kInstructionWords = 64;

// [Note: slot bits] slot ids have 10 bits (a 32-layer Llama's weights alone take ~290 slots, ResNet-50
// ~560, Inception-v3 ~1000). An output slot is a u16 in w5-6 (room for three outputs; every IType has
// one today). An input slot keeps its low byte in w1-4, its bit 8 in w0's upper half
// (bit 16 + k for input k) and its bit 9 in w6's upper half (bit 16 + k), so the icode is w0's low 16 bits.
// Slots below 256 encode exactly as the seed's u8 fields (kernels/mk/vm.cuh decodes the same). kMaxSlots
// is 1016, not 1024: the kernel parameter (32,764 bytes) holds the 128-byte Common and 32 bytes per slot
// (kernels/mk/vm.cuh [Note: tile maps]).
struct Instruction {
  uint16_t icode = 0;                       // w0 bits 0-15: 0 = Noop
  uint16_t src_slot_hi = 0;                 // w0 bits 16-31: bit k = bit 8 of input k's slot
  uint8_t src_tensors[kMaxSrcTensors]{};    // w1-4: bits 0-7 of the tensor slot per input operand
  uint16_t dst_tensors[kMaxDstTensors]{};   // w5-6 bits 0-15: tensor slot per output
  uint16_t src_slot_b9 = 0;                 // w6 bits 16-31: bit k = bit 9 of input k's slot
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

  int src_slot(int k) const {
    return src_tensors[k] | (((src_slot_hi >> k) & 1) << 8) | (((src_slot_b9 >> k) & 1) << 9);
  }
  int dst_slot(int k) const { return dst_tensors[k]; }
  void set_src_slot(int k, int slot) {
    src_tensors[k] = static_cast<uint8_t>(slot & 0xff);
    auto put = [&](uint16_t& bits, int b) {
      bits = static_cast<uint16_t>((bits & ~(1u << k)) | (((slot >> b) & 1u) << k));
    };
    put(src_slot_hi, 8);
    put(src_slot_b9, 9);
  }
  void set_dst_slot(int k, int slot) { dst_tensors[k] = static_cast<uint16_t>(slot); }
  int num_src_barriers() const { return num_src_input + num_src_reuse; }
  int num_dst_barriers() const { return num_dst_input + num_dst_reuse; }
};
static_assert(sizeof(Instruction) == kInstructionWords * 4, "an instruction is exactly 256 bytes");
static_assert(offsetof(Instruction, src_tensors) == 1 * 4 && offsetof(Instruction, dst_tensors) == 5 * 4 &&
                  offsetof(Instruction, src_slot_b9) == 6 * 4 + 2 &&
                  offsetof(Instruction, indices) == 7 * 4 && offsetof(Instruction, src_barriers) == 23 * 4 &&
                  offsetof(Instruction, src_targets) == 39 * 4 && offsetof(Instruction, num_src_input) == 55 * 4 &&
                  offsetof(Instruction, dst_barriers) == 56 * 4,
              "instruction fields sit at the word offsets of seed §06");

}  // namespace mk
