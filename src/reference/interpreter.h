// The CPU reference interpreter: executes a packed Program with simulated SMs (DESIGN §2, §8).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/program.h"

namespace mk {

// One tensor slot in host memory: contiguous, of the slot's TensorMeta.
struct SlotBuffer {
  void* data = nullptr;
};

struct InterpretOptions {
  uint64_t seed = 0;               // picks the interleaving of SMs
  bool global_work_queue = false;  // false: instruction i on SM i % num_sms; true: claimed in order
  bool check_races = true;         // tag every element with its writer and check reads
};

struct InterpretStats {
  int64_t instructions = 0;        // non-Noop instructions executed
  int64_t max_in_flight_skew = 0;  // largest index distance between SMs' current instructions
};

// Runs every instruction once, in an order the barriers allow, choosing among ready SMs with a
// seeded RNG. Throws DeadlockError (naming the stuck instructions and barriers) when work is left
// and no SM can move, RaceError when a read sees data its producer has not written.
InterpretStats interpret(const Program&, const std::vector<SlotBuffer>& slots, const InterpretOptions&);

}  // namespace mk
