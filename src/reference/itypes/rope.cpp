// CPU reference semantics of Rope (docs/itypes.md).
#include "itypes/rope.h"

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void Rope::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t* x0 = in.indices;
  const int32_t* y0 = in.indices + 4;
  const int32_t* c0 = in.indices + 8;
  const int64_t nd = in.indices[12], rows = in.indices[13], D = in.indices[14], h = D / 2;
  const auto box_at = [](const int32_t* o, int64_t a, int64_t b, int64_t c) {
    return Box{{o[0], o[1], o[2], o[3]}, {o[0] + 1, o[1] + a, o[2] + b, o[3] + c}};
  };
  // cos/sin are 1 deep/tall along their broadcast d/r dims (their origin already sits on the one
  // backing element along a broadcast b).
  const int64_t cd = (bcast_ >> 1 & 1) ? 1 : nd, cr = (bcast_ >> 2 & 1) ? 1 : rows;
  // x_bshd: the rows of the one (b, h) run along backing dim 1 (nd is 1), in the same row-major order.
  const std::vector<float> x =
      ctx.load(in.src_slot(0), x_bshd_ ? box_at(x0, rows, 1, D) : box_at(x0, nd, rows, D));
  const int64_t W = half_ ? h : D;  // table columns: half tables hold one per pair
  const std::vector<float> cs = ctx.load(in.src_slot(1), box_at(c0, cd, cr, W));
  const std::vector<float> sn = ctx.load(in.src_slot(2), box_at(c0, cd, cr, W));
  std::vector<float> y(x.size());
  for (int64_t j = 0; j < nd; ++j)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + (j * rows + r) * D;
      const int64_t crow = ((cd == 1 ? 0 : j) * cr + (cr == 1 ? 0 : r)) * W;
      float* yr = y.data() + (j * rows + r) * D;
      for (int64_t c = 0; c < D; ++c) {
        const float rot = interleaved_ ? (c % 2 == 0 ? -xr[c + 1] : xr[c - 1])  // rotate_every_two(x)
                                       : (c < h ? -xr[c + h] : xr[c - h]);  // rotate_half(x)
        const int64_t t = crow + (half_ ? c / 2 : c);
        yr[c] = xr[c] * cs[t] + rot * sn[t];
      }
    }
  ctx.store(in.dst_slot(0), box_at(y0, nd, rows, D), y);
}

}  // namespace mk
