#include "itypes/rms_norm.h"

#include <algorithm>
#include <cstdio>

#include "ir/error.h"

namespace mk {

RMSNorm::RMSNorm(double eps, bool has_weight, bool f16) : eps_(eps), has_weight_(has_weight), f16_(f16) {}

std::string RMSNorm::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", eps_);
  return std::string("eps=") + buf + (has_weight_ ? "" : ",no_weight") + (f16_ ? ",f16" : "");
}

int64_t RMSNorm::rows_per_instruction(int64_t cols, int64_t total_rows, const Profile& p) {
  const int64_t per_page = rows_per_page(cols, 2, p);  // bf16 rows padded to 128 bytes (rms_norm.cuh row_bytes)
  // Bigger instructions amortise the per-instruction latency; but not at the cost of idle SMs.
  const int64_t pages = std::clamp<int64_t>(ceil_div(total_rows, per_page * std::max(1, p.num_sms)), 1,
                                            std::max(1, p.rms_norm_pages));
  return per_page * pages;
}

void RMSNorm::validate(const NodeInfo& n) const {
  require_inputs(n, has_weight_ ? 2 : 1);
  if (n.outputs.size() != 1)
    fail("node '", n.name, "' (", n.target, "): expects 1 output, got ", n.outputs.size());
  const Operand& x = n.inputs[0];
  const auto& y = n.outputs[0];
  require_dtype(n, "input x", x.dtype(), half_dtype(f16_));
  require_dtype(n, "output", y.dtype, half_dtype(f16_));
  require_rank(n, "input x", x.shape(), 1, 4);
  if (x.shape() != y.shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()),
         " must equal the output shape ", shape_str(y.shape));
  require_tile_view(n, "input x", x);
  const int64_t C = x.shape().back();
  if (2 * C > n.profile.page_bytes)
    fail("node '", n.name, "' (", n.target, "): a row must fit in one page (2*C <= ", n.profile.page_bytes,
         " bytes), got C=", C);
  if (has_weight_) {
    const Operand& w = n.inputs[1];
    require_dtype(n, "weight", w.dtype(), half_dtype(f16_));
    if (w.shape() != std::vector<int64_t>{C})
      fail("node '", n.name, "' (", n.target, "): weight shape must be [", C, "] (C of x), got ",
           shape_str(w.shape()));
    require_tile_view(n, "weight", w);
  }
}

int64_t RMSNorm::num_instructions(const NodeInfo& n) const {
  const Coord4 s = n.outputs[0].padded();
  return s[0] * s[1] * tiles_per_plane(s, n.profile);
}

int64_t RMSNorm::tiles_per_plane(const Coord4& s, const Profile& p) {
  const int64_t rows = rows_per_instruction(s[3], s[0] * s[1] * s[2], p);
  return p.rms_norm_balance ? balanced_tiles_per_plane(s, rows, p.num_sms) : ceil_div(s[2], rows);
}

InstrDesc RMSNorm::instruction(const NodeInfo& n, int64_t i) const {
  const Coord4 s = n.outputs[0].padded();
  const int64_t C = s[3];
  const RowTile t = n.profile.rms_norm_balance
                        ? balanced_row_tile(s, tiles_per_plane(s, n.profile), i)
                        : row_tile(s, rows_per_instruction(C, s[0] * s[1] * s[2], n.profile), i);
  Box box;
  box.lo = t.origin;
  box.hi = {t.origin[0] + 1, t.origin[1] + 1, t.origin[2] + t.rows, C};
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(t.origin));
  push_origin(d.indices, t.origin);
  push_origin(d.indices, has_weight_ ? n.inputs[1].origin({0, 0, 0, 0}) : Coord4{0, 0, 0, 0});
  d.indices.push_back(static_cast<int32_t>(t.rows));
  d.indices.push_back(static_cast<int32_t>(C));
  d.reads = {{box}};
  if (has_weight_) d.reads.push_back({Box::of_shape(n.inputs[1].padded())});
  d.writes = {{box}};
  return d;
}

}  // namespace mk
