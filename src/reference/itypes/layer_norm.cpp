// CPU reference semantics of LayerNorm (docs/itypes.md).
#include "itypes/layer_norm.h"

#include <cmath>

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void LayerNorm::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t *x0 = in.indices, *y0 = in.indices + 4, *w0 = in.indices + 8, *b0 = in.indices + 11;
  const int64_t rows = in.indices[14], C = in.indices[15];
  std::vector<float> x =
      ctx.load(in.src_slot(0), {{x0[0], x0[1], x0[2], x0[3]}, {x0[0] + 1, x0[1] + 1, x0[2] + rows, x0[3] + C}});
  const auto param = [&](int slot, const int32_t* o) {
    return ctx.load(in.src_slot(slot), {{0, o[0], o[1], o[2]}, {1, o[0] + 1, o[1] + 1, o[2] + C}});
  };
  const std::vector<float> w = has_weight_ ? param(1, w0) : std::vector<float>(C, 1.f);
  const std::vector<float> b = has_bias_ ? param(has_weight_ ? 2 : 1, b0) : std::vector<float>(C, 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * C;
    double sum = 0;  // fp64 statistics, two passes: as close to any fp32 order as fp32 allows
    for (int64_t c = 0; c < C; ++c) sum += row[c];
    const double mean = sum / static_cast<double>(C);
    double ss = 0;
    for (int64_t c = 0; c < C; ++c) ss += (row[c] - mean) * (row[c] - mean);
    const float rstd = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(C) + eps_));
    const float m = static_cast<float>(mean);
    for (int64_t c = 0; c < C; ++c) row[c] = (row[c] - m) * rstd * w[c] + b[c];
  }
  ctx.store(in.dst_slot(0), {{y0[0], y0[1], y0[2], y0[3]}, {y0[0] + 1, y0[1] + 1, y0[2] + rows, y0[3] + C}}, x);
}

}  // namespace mk
