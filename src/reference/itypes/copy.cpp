// CPU reference semantics of Copy (docs/itypes.md).
#include "itypes/copy.h"

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void Copy::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t* x0 = in.indices;
  const int32_t* y = in.indices + 4;
  const int64_t rows = in.indices[8], cols = in.indices[9], nd = in.indices[10], xd = in.indices[11];
  // Strides of (i, j) in the loaded box, row-major over backing dims (the earlier dim is the slower);
  // 0 along a broadcast / 1-wide dim.
  int64_t rs = 0, cs = 0;
  if (src_.rows >= 0 && src_.cols >= 0) {
    if (src_.rows < src_.cols) rs = cols, cs = 1;
    else rs = 1, cs = rows;
  } else if (src_.rows >= 0) {
    rs = 1;
  } else if (src_.cols >= 0) {
    cs = 1;
  }
  // Slice k of the stack starts k further along backing dim xd (view dim 1), and along y's dim 1.
  for (int64_t k = 0; k < nd; ++k) {
    int64_t x[4] = {x0[0], x0[1], x0[2], x0[3]};
    if (xd >= 0) x[xd] += k;
    // The backing box the tile reads: extent rows / cols along the dims they run along, 1 elsewhere.
    Box xb{{x[0], x[1], x[2], x[3]}, {x[0] + 1, x[1] + 1, x[2] + 1, x[3] + 1}};
    if (src_.rows >= 0) xb.hi[src_.rows] += rows - 1;
    if (src_.cols >= 0) xb.hi[src_.cols] += cols - 1;
    const std::vector<float> v = ctx.load(in.src_slot(0), xb);
    std::vector<float> out(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = v[i * rs + j * cs];
    ctx.store(in.dst_slot(0), {{y[0], y[1] + k, y[2], y[3]}, {y[0] + 1, y[1] + k + 1, y[2] + rows, y[3] + cols}}, out);
  }
}

}  // namespace mk
