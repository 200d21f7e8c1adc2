#include "trace/fuse_gemm_act.h"

#include <memory>

#include "itypes/elementwise.h"
#include "itypes/gemm.h"

namespace mk {

namespace {

// The Gemm node `u` can fold into, or -1: u is ElementwiseUnary(<one op without a constant>) whose input
// is the whole, straight output of a Gemm (no swiglu, no act yet) that only u reads, of u's dtype and shape.
int foldable_gemm(const DAG& dag, const Node& u) {
  const auto* ew = u.is_compute() ? dynamic_cast<const ElementwiseUnary*>(u.itype.get()) : nullptr;
  if (!ew || ew->steps().size() != 1 || ew->has_constants() || ew->steps()[0].op == UnaryStep::Op::identity) return -1;
  if (u.inputs.size() != 1 || u.outputs.size() != 1) return -1;
  const Edge& e = u.inputs[0];
  const Node& g = dag.nodes[e.node];
  const auto* gemm = g.is_compute() ? dynamic_cast<const Gemm*>(g.itype.get()) : nullptr;
  if (!gemm || gemm->flags().swiglu || !gemm->flags().act.empty() || g.outputs.size() != 1) return -1;
  if (g.users[0].size() != 1 || e.output != 0 || e.range.alias || !e.range.is_full(g.outputs[0].padded())) return -1;
  if (!(u.outputs[0] == g.outputs[0])) return -1;
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
    into[u.id] = g;
    ++fused;
  }
  if (fused > 0) dag.fold_nodes(into);
  return fused;
}

}  // namespace mk
