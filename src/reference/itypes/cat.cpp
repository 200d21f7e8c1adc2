// CPU reference semantics of Cat (docs/itypes.md).
#include "itypes/cat.h"

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void Cat::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t k = in.indices[0];
  const int32_t *x = in.indices + 1, *y = in.indices + 5;
  const int64_t rows = in.indices[9], cols = in.indices[10], nd = in.indices[11];
  const std::vector<float> v =
      ctx.load(in.src_slot(k), {{x[0], x[1], x[2], x[3]}, {x[0] + 1, x[1] + nd, x[2] + rows, x[3] + cols}});
  ctx.store(in.dst_slot(0), {{y[0], y[1], y[2], y[3]}, {y[0] + 1, y[1] + nd, y[2] + rows, y[3] + cols}}, v);
}

}  // namespace mk
