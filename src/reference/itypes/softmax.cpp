// CPU reference semantics of Softmax (docs/itypes.md).
#include "itypes/softmax.h"

#include <cmath>
#include <limits>

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void Softmax::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t *x0 = in.indices, *y0 = in.indices + 4;
  const int64_t rows = in.indices[8], C = in.indices[9];
  std::vector<float> x =
      ctx.load(in.src_slot(0), {{x0[0], x0[1], x0[2], x0[3]}, {x0[0] + 1, x0[1] + 1, x0[2] + rows, x0[3] + C}});
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * C;
    float m = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (int64_t c = 0; c < C; ++c) {
      nan |= std::isnan(row[c]);
      m = row[c] > m ? row[c] : m;
    }
    if (nan) m = std::numeric_limits<float>::quiet_NaN();  // the whole row NaN, as torch's max -> exp gives
    if (safe_ && m == -std::numeric_limits<float>::infinity()) {  // every entry masked: zeros
      for (int64_t c = 0; c < C; ++c) row[c] = 0.f;
      continue;
    }
    double sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += std::exp(static_cast<double>(row[c] - m));
    const float s = static_cast<float>(sum), ls = static_cast<float>(std::log(sum));
    for (int64_t c = 0; c < C; ++c) row[c] = log_ ? (row[c] - m) - ls : std::exp(row[c] - m) / s;
  }
  ctx.store(in.dst_slot(0), {{y0[0], y0[1], y0[2], y0[3]}, {y0[0] + 1, y0[1] + 1, y0[2] + rows, y0[3] + C}}, x);
}

}  // namespace mk
