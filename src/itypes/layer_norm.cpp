#include "itypes/layer_norm.h"

#include <cstdio>

#include "ir/error.h"

namespace mk {

LayerNorm::LayerNorm(double eps, bool has_weight, bool has_bias)
    : eps_(eps), has_weight_(has_weight), has_bias_(has_bias) {}

std::string LayerNorm::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", eps_);
  return std::string("eps=") + buf + (has_weight_ ? "" : ",no_weight") + (has_bias_ ? "" : ",no_bias");
}

void LayerNorm::validate(const NodeInfo& n) const {
  require_row_operands(n, 1 + has_weight_ + has_bias_, true);
  const int64_t C = n.inputs[0].shape().back();
  for (int k = 1; k < static_cast<int>(n.inputs.size()); ++k) {
    const char* what = k == 1 && has_weight_ ? "weight" : "bias";
    const Operand& p = n.inputs[k];
    require_float(n, what, p.dtype());
    if (p.shape() != std::vector<int64_t>{C})
      fail("node '", n.name, "' (", n.target, "): ", what, " shape must be [", C, "] (C of x), got ", shape_str(p.shape()));
    require_tile_view(n, what, p);
    // Its origin travels as (d, r, c) (docs/itypes.md): a view into a 4-D slot's first plane only.
    if (p.origin({0, 0, 0, 0})[0] != 0)
      fail("node '", n.name, "' (", n.target, "): ", what, " must lie in the first plane of its tensor (a view "
           "into a stacked 4-D parameter), got origin ", p.origin({0, 0, 0, 0})[0]);
  }
}

int64_t LayerNorm::num_instructions(const NodeInfo& n) const { return num_page_row_tiles(n); }

InstrDesc LayerNorm::instruction(const NodeInfo& n, int64_t i) const {
  const PageRowTile t = page_row_tile(n, i);
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin(t.tile.origin));
  push_origin(d.indices, t.tile.origin);
  for (int k = 1; k < 3; ++k) {  // weight's, then bias' (d, r, c); zeros for an absent one
    const bool present = k == 1 ? has_weight_ : has_bias_;
    const int at = k == 1 || !has_weight_ ? 1 : 2;
    const Coord4 p = present ? n.inputs[at].origin({0, 0, 0, 0}) : Coord4{0, 0, 0, 0};
    for (int j = 1; j < 4; ++j) d.indices.push_back(static_cast<int32_t>(p[j]));
  }
  d.indices.push_back(static_cast<int32_t>(t.tile.rows));
  d.indices.push_back(static_cast<int32_t>(t.box.hi[3]));
  d.reads = {{t.box}};
  for (size_t k = 1; k < n.inputs.size(); ++k) d.reads.push_back({Box::of_shape(n.inputs[k].padded())});
  d.writes = {{t.box}};
  return d;
}

}  // namespace mk
