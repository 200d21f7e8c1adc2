#include "trace/fuse_attention_output.h"

#include <memory>

#include "itypes/attention.h"
#include "itypes/copy.h"

namespace mk {

namespace {

// Whether `r` is the transpose(1, 2) of the whole (B, H, S, D) tensor `out`: view (B, S, H, D) with view
// dims b, s, h, d on backing dims 0, 2, 1, 3 (size-1 dims may run anywhere), nothing sliced or broadcast.
bool is_transpose_12(const TensorRange& r, const Coord4& out) {
  static constexpr int8_t kDim[4] = {0, 2, 1, 3};
  if (r.alias || r.has_broadcast() || r.view_shape.size() != 4 || !(r.box == Box::of_shape(out))) return false;
  const Coord4 v = r.view_padded();
  for (int i = 0; i < 4; ++i)
    if (v[i] != out[kDim[i]] || (v[i] > 1 && r.view_dim[i] != kDim[i])) return false;
  return true;
}

}  // namespace

int fuse_attention_output(DAG& dag) {
  std::vector<int> into(dag.nodes.size());
  int fused = 0;
  for (Node& c : dag.nodes) {
    into[c.id] = c.id;
    if (!c.is_compute() || !dynamic_cast<const Copy*>(c.itype.get()) || c.inputs.size() != 1) continue;
    Node& a = dag.nodes[c.inputs[0].node];
    const auto* at = a.is_compute() ? dynamic_cast<const Attention*>(a.itype.get()) : nullptr;
    if (!at || (at->bshd() & Attention::kBshdO) || a.users[0].size() != 1 || c.inputs[0].output != 0) continue;
    if (!is_transpose_12(c.inputs[0].range, a.outputs[0].padded()) || c.outputs[0].dtype != a.outputs[0].dtype) continue;
    a.itype = at->with_bshd(at->bshd() | Attention::kBshdO);
    a.outputs[0] = c.outputs[0];  // (B, S, H, D), contiguous: what the Copy wrote
    into[c.id] = a.id;
    ++fused;
  }
  if (fused > 0) dag.fold_nodes(into);
  return fused;
}

}  // namespace mk
