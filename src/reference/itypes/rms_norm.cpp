// CPU reference semantics of RMSNorm (docs/itypes.md).
#include "itypes/rms_norm.h"

#include <cmath>

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void RMSNorm::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t* x0 = in.indices;
  const int32_t* y0 = in.indices + 4;
  const int32_t* w0 = in.indices + 8;
  const int64_t rows = in.indices[12], C = in.indices[13];
  const Box xb{{x0[0], x0[1], x0[2], x0[3]}, {x0[0] + 1, x0[1] + 1, x0[2] + rows, x0[3] + C}};
  const Box yb{{y0[0], y0[1], y0[2], y0[3]}, {y0[0] + 1, y0[1] + 1, y0[2] + rows, y0[3] + C}};
  std::vector<float> x = ctx.load(in.src_slot(0), xb);
  std::vector<float> w(C, 1.f);
  if (has_weight_)
    w = ctx.load(in.src_slot(1), {{w0[0], w0[1], w0[2], w0[3]}, {w0[0] + 1, w0[1] + 1, w0[2] + 1, w0[3] + C}});
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * C;
    float ss = 0.f;
    for (int64_t c = 0; c < C; ++c) ss += row[c] * row[c];
    const float inv = 1.f / std::sqrt(ss / static_cast<float>(C) + static_cast<float>(eps_));
    for (int64_t c = 0; c < C; ++c) row[c] = row[c] * inv * w[c];
  }
  ctx.store(in.dst_slot(0), yb, x);
}

}  // namespace mk
