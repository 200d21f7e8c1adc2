// _C.interpret: the CPU reference interpreter (docs/core-api.md). Program is bound in bind_schedule.cpp,
// the error types in bind_ir.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include <nanobind/stl/vector.h>

#include "python/bind.h"
#include "reference/interpreter.h"

void bind_reference(nb::module_& m) {
  m.def(
      "interpret",
      [](const mk::Program& program, const std::vector<uintptr_t>& slot_ptrs, uint64_t seed, bool global_work_queue,
         bool check_races) {
        if (slot_ptrs.size() != program.slots.size())
          throw nb::value_error(("interpret: got " + std::to_string(slot_ptrs.size()) + " slot pointers for " +
                                 std::to_string(program.slots.size()) + " slots")
                                    .c_str());
        std::vector<mk::SlotBuffer> slots;
        slots.reserve(slot_ptrs.size());
        for (uintptr_t p : slot_ptrs) slots.push_back({reinterpret_cast<void*>(p)});
        const mk::InterpretOptions opts{seed, global_work_queue, check_races};
        mk::InterpretStats stats;
        {
          // Pure C++ over caller-owned buffers: other Python threads may run meanwhile.
          nb::gil_scoped_release release;
          stats = mk::interpret(program, slots, opts);
        }
        nb::dict out;
        out["instructions"] = stats.instructions;
        out["max_in_flight_skew"] = stats.max_in_flight_skew;
        return out;
      },
      nb::arg("program"), nb::arg("slot_ptrs"), nb::arg("seed") = 0, nb::arg("global_work_queue") = false,
      nb::arg("check_races") = true,
      "Runs the program on the CPU with simulated SMs over host buffers (slot_ptrs[k]: address of slot k). "
      "Returns {'instructions', 'max_in_flight_skew'}; raises DeadlockError / RaceError.");
}
