#include "trace/fuse_gemm_act.h"

#include <memory>

#include "itypes/elementwise.h"
#include "itypes/gemm.h"

namespace mk {

namespace {

// Whether `r` reads all of a contiguous tensor of shape `out` in order: the tensor itself, or a reshape
// of it (an alias of the whole run: a 3-D linear's (B, S, N) view of its (B * S, N) matmul) of `shape`.
bool whole_in_order(const TensorRange& r, const TensorMeta& out, const std::vector<int64_t>& shape) {
  if (!r.alias) return shape == out.shape && r.is_full(out.padded());
  TensorMeta seen = out;
  seen.shape = r.alias->shape;
  return r.alias->offset == 0 && r.alias->shape == shape && seen.numel() == out.numel() && r.is_full(seen.padded());
}

// The Gemm node `u` can fold into, or -1: u is ElementwiseUnary(<one op without a constant>) whose input
// is the whole output of a Gemm (no swiglu, no act yet), in order, that only u reads, of u's dtype.
int foldable_gemm(const DAG& dag, const Node& u) {
  const auto* ew = u.is_compute() ? dynamic_cast<const ElementwiseUnary*>(u.itype.get()) : nullptr;
  if (!ew || ew->steps().size() != 1 || ew->has_constants() || ew->steps()[0].op == UnaryStep::Op::identity) return -1;
  if (u.inputs.size() != 1 || u.outputs.size() != 1) return -1;
  const Edge& e = u.inputs[0];
  const Node& g = dag.nodes[e.node];
  const auto* gemm = g.is_compute() ? dynamic_cast<const Gemm*>(g.itype.get()) : nullptr;
  if (!gemm || gemm->flags().swiglu || !gemm->flags().act.empty() || g.outputs.size() != 1) return -1;
  if (g.users[0].size() != 1 || e.output != 0 || u.outputs[0].dtype != g.outputs[0].dtype) return -1;
  if (!whole_in_order(e.range, g.outputs[0], u.outputs[0].shape)) return -1;
  return g.id;
}

}  // namespace

int fuse_gemm_act(DAG& dag) {
  std::vector<int> into(dag.nodes.size());  // where reads of node k go
  int fused = 0;
  for (Node& u : dag.nodes) {
    into[u.id] = u.id;
    const int g = foldable_gemm(dag, u);
    if (g < 0) continue;
    Gemm::Flags f = static_cast<const Gemm&>(*dag.nodes[g].itype).flags();
    f.act = static_cast<const ElementwiseUnary&>(*u.itype).ops()[0];
    dag.nodes[g].itype = std::make_shared<Gemm>(f);
    // u's readers now read g's output: a reshape of it when u had another shape (the elements are in the
    // same order; a reader's own reshape of u stays as it is).
    if (u.outputs[0].shape != dag.nodes[g].outputs[0].shape)
      for (const Use& use : u.users[0]) {
        TensorRange& r = dag.nodes[use.node].inputs[use.input].range;
        if (!r.alias) r.alias = TensorRange::Alias{0, u.outputs[0].shape};
      }
    into[u.id] = g;
    ++fused;
  }
  if (fused > 0) dag.fold_nodes(into);
  return fused;
}

}  // namespace mk
