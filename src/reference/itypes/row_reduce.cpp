// CPU reference semantics of RowReduce (docs/itypes.md).
#include "itypes/row_reduce.h"

#include <cmath>
#include <limits>

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void RowReduce::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t *x = in.indices, *y = in.indices + 4;
  const int64_t rows = in.indices[8], C = in.indices[9];
  const std::vector<float> v =
      ctx.load(in.src_slot(0), {{x[0], x[1], x[2], x[3]}, {x[0] + 1, x[1] + 1, x[2] + rows, x[3] + C}});
  std::vector<float> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (op_ == "max") {  // aten.amax: NaN if any element is NaN; -inf for a row of -inf
      float m = -std::numeric_limits<float>::infinity();
      bool nan = false;
      for (int64_t c = 0; c < C; ++c) {
        const float e = v[r * C + c];
        nan |= std::isnan(e);
        m = e > m ? e : m;
      }
      out[r] = nan ? std::numeric_limits<float>::quiet_NaN() : m;
      continue;
    }
    double acc = 0;  // fp64 sum, rounded once: as close to any summation order as fp32 allows
    for (int64_t c = 0; c < C; ++c) acc += v[r * C + c];
    out[r] = static_cast<float>(op_ == "mean" ? acc / static_cast<double>(C) : acc);
  }
  // keepdim: rows run along the output's dim 2; otherwise along its dim 3 (row-major, same order).
  Box yb{{y[0], y[1], y[2], y[3]}, {y[0] + 1, y[1] + 1, y[2] + 1, y[3] + 1}};
  yb.hi[keepdim_ ? 2 : 3] += rows - 1;
  ctx.store(in.dst_slot(0), yb, out);
}

}  // namespace mk
