#include "trace/fuse_gemm_rms_norm.h"

#include <memory>

#include "itypes/gemm.h"
#include "itypes/rms_norm.h"
#include "trace/fuse_switches.h"

namespace mk {

namespace {

// Off by default: measured no faster (H200, 2026-12-03, benchmarks/notes.md Session 26: HF 1B kernel 5.062
// ms folded vs 5.076 not, HF 8B 6.860 vs 6.559). MEGAKITTENS_FUSE=gemm_rms turns it on.
bool enabled() { return fuse_switch("gemm_rms").value_or(false); }

}  // namespace

int fuse_gemm_rms_norm(DAG& dag) {
  if (!enabled()) return 0;
  std::vector<int> into(dag.nodes.size());
  int fused = 0;
  for (Node& u : dag.nodes) {
    into[u.id] = u.id;
    const auto* norm = u.is_compute() ? dynamic_cast<const RMSNorm*>(u.itype.get()) : nullptr;
    if (!norm || !norm->has_weight() || u.inputs.size() != 2 || u.outputs.size() != 1) continue;
    const Edge &xe = u.inputs[0], &we = u.inputs[1];
    Node& g = dag.nodes[xe.node];
    const auto* gemm = g.is_compute() ? dynamic_cast<const Gemm*>(g.itype.get()) : nullptr;
    if (!gemm || g.outputs.size() != 1 || xe.output != 0) continue;
    Gemm::Flags f = gemm->flags();
    if (f.swiglu || f.rope != 0 || f.rms_out || f.rms_scale) continue;
    const TensorMeta& out = g.outputs[0];
    if (out.shape.size() != 2 || out.dtype != DType::bf16 || u.outputs[0].dtype != DType::bf16) continue;
    const int64_t M = out.shape[0], N = out.shape[1];
    if (N % 64 != 0 || xe.range.view_shape.empty() || xe.range.view_shape.back() != N || !xe.range.whole_run(out))
      continue;
    const TensorMeta& wm = dag.nodes[we.node].outputs[we.output];
    if (!dag.nodes[we.node].is_input() || wm.dtype != DType::bf16 || we.range.alias ||
        we.range.view_shape != std::vector<int64_t>{N} || !we.range.is_full(wm.padded()))
      continue;
    // Readers: Gemms reading the norm's whole output as (M, N) A.
    bool ok = !u.users[0].empty();
    for (const Use& use : u.users[0]) {
      const Node& r = dag.nodes[use.node];
      const auto* rg = r.is_compute() ? dynamic_cast<const Gemm*>(r.itype.get()) : nullptr;
      const bool plain = rg && !rg->flags().transpose_a && !rg->flags().rms_scale && !rg->flags().rms_out;
      ok = ok && plain && use.input == 0 && r.inputs[0].range.view_shape == std::vector<int64_t>{M, N} &&
           r.inputs[0].range.whole_run(u.outputs[0]);
    }
    if (!ok) continue;
    const int gid = g.id;
    for (const Use& use : u.users[0]) {
      Node& r = dag.nodes[use.node];
      Gemm::Flags rf = static_cast<const Gemm&>(*r.itype).flags();
      rf.rms_scale = norm->eps();
      r.inputs[0] = Edge{gid, 1, TensorRange::full({M, N})};
      r.inputs.push_back(Edge{gid, 2, TensorRange::full({M, N / 64})});
      r.itype = std::make_shared<Gemm>(rf);
    }
    f.rms_out = true;
    g.inputs.push_back(Edge{we.node, we.output, we.range});
    g.outputs.push_back(TensorMeta{DType::bf16, {M, N}, out.device});
    g.outputs.push_back(TensorMeta{DType::f32, {M, N / 64}, out.device});
    g.users.resize(3);
    g.itype = std::make_shared<Gemm>(f);
    into[u.id] = gid;
    ++fused;
  }
  if (fused > 0) dag.fold_nodes(into);
  return fused;
}

}  // namespace mk
