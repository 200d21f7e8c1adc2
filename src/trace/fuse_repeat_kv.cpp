#include "trace/fuse_repeat_kv.h"

#include <optional>

namespace mk {

namespace {

bool call(const FxNode& n, const char* target) { return n.op == "call_function" && n.target == target; }

bool is_sdpa(const FxNode& n) {
  return n.op == "call_function" && (n.target == "aten.scaled_dot_product_attention.default" ||
                                     n.target == "aten._scaled_dot_product_flash_attention.default" ||
                                     n.target == "aten._scaled_dot_product_flash_attention_for_cpu.default" ||
                                     n.target == "aten._scaled_dot_product_efficient_attention.default" ||
                                     n.target == "aten._scaled_dot_product_cudnn_attention.default");
}

const std::vector<int64_t>* shape_of(const FxNode& n) {
  return n.outputs.size() == 1 && n.outputs[0] ? &n.outputs[0]->shape : nullptr;
}

std::optional<int64_t> int_arg(const FxArg& a) {
  if (a.kind == FxArg::Kind::Int) return a.i;
  return std::nullopt;
}

// The x of a repeat_kv chain ending at node r, or -1.
int repeated_source(const FxGraph& g, int r) {
  const FxNode& rv = g.nodes[r];
  if (!(call(rv, "aten.view.default") || call(rv, "aten._unsafe_view.default") || call(rv, "aten.reshape.default")) ||
      rv.args.size() != 2 || !rv.args[0].is_node())
    return -1;
  // The clone is absent when the expanded tensor can be viewed as it is (one KV head: Hk = 1).
  int e = static_cast<int>(rv.args[0].i);
  if (const FxNode& cl = g.nodes[e]; call(cl, "aten.clone.default")) {
    if (cl.args.size() != 1 || !cl.args[0].is_node()) return -1;
    for (const auto& [k, v] : cl.kwargs)
      if (k != "memory_format" || (v.kind != FxArg::Kind::None && v.s != "torch.contiguous_format")) return -1;
    e = static_cast<int>(cl.args[0].i);
  }
  const FxNode& ex = g.nodes[e];
  if (!call(ex, "aten.expand.default") || ex.args.size() != 2 || !ex.args[0].is_node()) return -1;
  const FxNode& un = g.nodes[ex.args[0].i];
  if (!call(un, "aten.unsqueeze.default") || un.args.size() != 2 || !un.args[0].is_node() || int_arg(un.args[1]) != 2)
    return -1;
  const int x = static_cast<int>(un.args[0].i);
  const auto *xs = shape_of(g.nodes[x]), *es = shape_of(ex), *rs = shape_of(rv);
  if (!xs || !es || !rs || xs->size() != 4 || es->size() != 5 || rs->size() != 4) return -1;
  const auto &X = *xs, &E = *es, &R = *rs;
  const int64_t n = E[2];
  if (E != std::vector<int64_t>{X[0], X[1], n, X[2], X[3]}) return -1;
  if (R != std::vector<int64_t>{X[0], X[1] * n, X[2], X[3]}) return -1;
  return x;
}

}  // namespace

int fuse_repeat_kv(FxGraph& g) {
  int rewritten = 0;
  for (FxNode& n : g.nodes) {
    if (!is_sdpa(n)) continue;
    for (size_t k = 1; k < 3 && k < n.args.size(); ++k) {
      if (!n.args[k].is_node()) continue;
      const int x = repeated_source(g, static_cast<int>(n.args[k].i));
      if (x < 0) continue;
      n.args[k].i = x;
      ++rewritten;
    }
  }
  return rewritten;
}

}  // namespace mk
