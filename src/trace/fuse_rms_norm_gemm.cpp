#include "trace/fuse_rms_norm_gemm.h"

#include <memory>

#include "itypes/gemm.h"
#include "itypes/rms_norm.h"
#include "trace/fuse_switches.h"

namespace mk {

namespace {

// Off by default: correct but slower (H100, 2026-12-05, HF 1B device time 5.834 ms folded vs 5.279 ms; benchmarks/
// notes.md Session 44). MEGAKITTENS_FUSE=rms_in turns it on.
bool enabled() { return fuse_switch("rms_in").value_or(false); }

// A reader that can take the norm: a bf16 Gemm viewing the norm's output whole as its 2-D A.
bool reads_as_a(const DAG& dag, const Use& use, const TensorMeta& y, int64_t K) {
  const Node& r = dag.nodes[use.node];
  const auto* g = r.is_compute() ? dynamic_cast<const Gemm*>(r.itype.get()) : nullptr;
  if (!g || use.input != 0) return false;
  const Gemm::Flags& f = g->flags();
  if (f.transpose_a || f.rms_in || f.f16) return false;
  const TensorRange& a = r.inputs[0].range;
  return a.view_shape.size() == 2 && a.view_shape[1] == K && a.whole_run(y);
}

}  // namespace

int fuse_rms_norm_gemm(DAG& dag) {
  if (!enabled()) return 0;
  std::vector<int> into(dag.nodes.size());
  int fused = 0;
  for (Node& u : dag.nodes) {
    into[u.id] = u.id;
    const auto* norm = u.is_compute() ? dynamic_cast<const RMSNorm*>(u.itype.get()) : nullptr;
    if (!norm || !norm->has_weight() || norm->f16() || u.inputs.size() != 2 || u.outputs.size() != 1) continue;
    const Edge &xe = u.inputs[0], &we = u.inputs[1];
    const TensorMeta& x = dag.nodes[xe.node].outputs[xe.output];
    const TensorMeta& y = u.outputs[0];
    if (x.dtype != DType::bf16 || y.dtype != DType::bf16 || y.shape.empty() || !xe.range.whole_run(x)) continue;
    const int64_t K = y.shape.back();
    if (K % 8 != 0 || x.shape.empty() || x.shape.back() != K) continue;
    const TensorMeta& wm = dag.nodes[we.node].outputs[we.output];
    if (!dag.nodes[we.node].is_input() || wm.dtype != DType::bf16 || we.range.alias ||
        we.range.view_shape != std::vector<int64_t>{K} || !we.range.is_full(wm.padded()))
      continue;
    bool ok = !u.users[0].empty();
    for (const Use& use : u.users[0]) ok = ok && reads_as_a(dag, use, y, K);
    if (!ok) continue;
    for (const Use& use : u.users[0]) {
      Node& r = dag.nodes[use.node];
      Gemm::Flags f = static_cast<const Gemm&>(*r.itype).flags();
      f.rms_in = norm->eps();
      const int64_t M = y.numel() / K;  // x whole as (M, K)
      const TensorRange a = TensorRange::full(x.shape);
      r.inputs[0] = Edge{xe.node, xe.output, x.shape == std::vector<int64_t>{M, K} ? a : a.reshape({M, K}, x.shape)};
      r.inputs.push_back(we);
      r.itype = std::make_shared<Gemm>(f);
    }
    into[u.id] = xe.node;  // no edge is left on the norm: it is dropped
    ++fused;
  }
  if (fused > 0) dag.fold_nodes(into);
  return fused;
}

}  // namespace mk
