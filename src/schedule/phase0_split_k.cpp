// Phase 0: split-K. A Gemm with few output tiles (a 1B Llama's down projection: 1024 x 2048 out, K 8192,
// one wave of narrow tiles at a third of the SMs' speed) runs faster as S Gemms over consecutive K
// ranges whose tiles share the waves: split s adds split s - 1's output as its `bias_full`, the first
// one keeps the node's own bias. Every split's loads wait only for its A and B, since the bias is a
// late input (docs/instruction.md), so the splits' mainloops run side by side and only their epilogues
// chain. Each split rounds to bf16 once: as eager rounds a linear layer before its residual add.
// Gemm::split_k decides; Profile::gemm_split_k = 1 turns the phase off.
#include <memory>
#include <optional>
#include <string>

#include "itypes/gemm.h"
#include "schedule/phases.h"

namespace mk {

std::optional<DAG> phase0_split_k(const DAG& dag, const ScheduleOptions& opt) {
  const std::vector<std::vector<int64_t>> groups = gemm_groups(dag);
  std::vector<int> splits(dag.nodes.size(), 1);
  bool any = false;
  for (const Node& n : dag.nodes) {
    const auto* g = n.is_compute() ? dynamic_cast<const Gemm*>(n.itype.get()) : nullptr;
    if (!g) continue;
    const NodeInfo info = node_info(dag, n, opt, groups[n.id]);
    g->validate(info);  // split_k reads the shapes
    splits[n.id] = g->split_k(info);
    any |= splits[n.id] > 1;
  }
  if (!any) return std::nullopt;

  DAG out;
  out.name = dag.name;
  std::vector<int> new_id(dag.nodes.size(), -1);
  auto push = [&out](Node n) {
    n.id = static_cast<int>(out.nodes.size());
    n.users.clear();
    out.nodes.push_back(std::move(n));
    return out.nodes.back().id;
  };
  for (const Node& n : dag.nodes) {
    Node copy = n;
    for (Edge& e : copy.inputs) e.node = new_id[e.node];
    const int S = splits[n.id];
    if (S <= 1) {
      new_id[n.id] = push(std::move(copy));
      continue;
    }
    const Gemm::Flags f = static_cast<const Gemm&>(*n.itype).flags();
    const int64_t K = n.inputs[0].range.view_shape.back();
    const int64_t chunk = Gemm::split_k_chunk(K, S, opt.profile.gemm_k);
    int prev = -1;
    for (int s = 0; s < S; ++s) {
      const int64_t k0 = s * chunk, k1 = s + 1 < S ? k0 + chunk : K;
      Node part = copy;  // the last split keeps the node's name, hence its place for the users
      if (s + 1 < S) part.name = n.name + ".k" + std::to_string(s);
      part.inputs[0].range = part.inputs[0].range.slice(-1, k0, k1);
      part.inputs[1].range = part.inputs[1].range.slice(-2, k0, k1);
      Gemm::Flags fs = f;
      if (s + 1 < S) fs.act.clear();  // the activation applies to the whole sum: the last piece's
      if (s > 0) {
        fs.bias = Gemm::Bias::full;
        const Edge bias{prev, 0, TensorRange::full(n.outputs[0].shape)};
        if (f.bias != Gemm::Bias::none) part.inputs[2] = bias;
        else part.inputs.insert(part.inputs.begin() + 2, bias);
      }
      part.itype = std::make_shared<Gemm>(fs);
      prev = push(std::move(part));
    }
    new_id[n.id] = prev;
  }
  out.add_use_links();
  out.validate();
  return out;
}

}  // namespace mk
