// CPU reference semantics of Embedding (docs/itypes.md).
#include "itypes/embedding.h"

#include <cmath>
#include <stdexcept>

#include "ir/error.h"
#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void Embedding::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t *ids0 = in.indices, *w0 = in.indices + 4, *y0 = in.indices + 8;
  const int64_t rows = in.indices[12], C = in.indices[13], V = in.indices[14];
  // Ids load as fp32: exact below 2^24, and any larger value is still >= V for every table that fits
  // in memory, so the range check below cannot pass a wrong row.
  const std::vector<float> ids = ctx.load(
      in.src_slot(1), {{ids0[0], ids0[1], ids0[2], ids0[3]}, {ids0[0] + 1, ids0[1] + 1, ids0[2] + 1, ids0[3] + rows}});
  std::vector<float> out;
  out.reserve(static_cast<size_t>(rows * C));
  for (int64_t r = 0; r < rows; ++r) {
    const float id = ids[r];
    if (!(id >= 0.f && id < static_cast<float>(V)))
      fail<std::out_of_range>("Embedding: index ", static_cast<double>(id), " (row ", y0[2] + r, " of the output) is out of range for a table of ", V,
                              " rows (instruction ", ctx.instruction_index, ")");
    const int64_t row = static_cast<int64_t>(id);
    const std::vector<float> w =
        ctx.load(in.src_slot(0), {{w0[0], w0[1], w0[2] + row, w0[3]}, {w0[0] + 1, w0[1] + 1, w0[2] + row + 1, w0[3] + C}});
    out.insert(out.end(), w.begin(), w.end());
  }
  ctx.store(in.dst_slot(0), {{y0[0], y0[1], y0[2], y0[3]}, {y0[0] + 1, y0[1] + 1, y0[2] + rows, y0[3] + C}}, out);
}

}  // namespace mk
