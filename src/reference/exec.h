// What an IType's reference semantics may do with memory: load a box of a tensor slot as fp32,
// store a box back (rounded to the slot's dtype). The interpreter checks every access.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace mk {

class ExecContext {
 public:
  virtual ~ExecContext() = default;
  // The box (backing coords) of slot `slot`, row-major over the box's 4-D extents, as fp32.
  virtual std::vector<float> load(int slot, const Box& box) = 0;
  // Writes `data` (row-major over the box) into the box, rounding to the slot's dtype.
  virtual void store(int slot, const Box& box, const std::vector<float>& data) = 0;
  virtual const TensorMeta& meta(int slot) const = 0;
  int64_t instruction_index = 0;  // global index in the instruction list
  int cluster_rank = 0;           // instruction_index % cluster_size
};

}  // namespace mk
