// Helpers of the FX-level pattern matchers (fuse_rms_norm, fuse_rope): use counts, single users, casts.
// A matcher reads the graph's nodes by index; after a rewrite it calls recount().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/fx.h"

namespace mk {

struct FxMatch {
  FxGraph& g;
  std::vector<int> uses;  // references to each node from args, kwargs and the output

  explicit FxMatch(FxGraph& graph) : g(graph) { recount(); }
  void recount();

  const FxNode* node(const FxArg& a) const { return a.is_node() ? &g.nodes[a.i] : nullptr; }
  static bool call(const FxNode* n, const char* target) {
    return n && n->op == "call_function" && n->target == target;
  }
  static const FxTensor* meta(const FxNode* n) {
    return n && n->outputs.size() == 1 && n->outputs[0] ? &*n->outputs[0] : nullptr;
  }
  // aten._to_copy(src, dtype=D) with no other conversion: the dtype name ("float32"), else "".
  static std::string cast_dtype(const FxNode* n);
  // aten.view / _unsafe_view / reshape.
  static bool is_reshape(const FxNode* n) {
    return call(n, "aten._unsafe_view.default") || call(n, "aten.view.default") || call(n, "aten.reshape.default");
  }
  // Arguments for rewritten nodes: a reference to node k; a list of ints (a shape).
  static FxArg node_arg(int64_t k);
  static FxArg int_list(const std::vector<int64_t>& v);
  // The single user of node k (a node index), or -1.
  int sole_user(int k) const;
  static bool refers(const FxArg& a, int k);

 private:
  void count(const FxArg& a);
};

// Runs matcher M (an FxMatch with bool match(int node)) at every node; returns the number of rewrites.
template <class M>
int rewrite_all(FxGraph& g) {
  int fused = 0;
  M m(g);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (m.match(static_cast<int>(k))) {
      ++fused;
      m.recount();  // the rewrite changed the use counts
    }
  return fused;
}

}  // namespace mk
