#include "trace/fuse_residual.h"

#include <functional>

#include "trace/fx_match.h"

namespace mk {

namespace {

// Inserts `node` at index pos; every reference to a node at pos or later moves up by one.
void insert_node(FxGraph& g, int pos, FxNode node) {
  const std::function<void(FxArg&)> shift = [&](FxArg& a) {
    if (a.is_node() && a.i >= pos) ++a.i;
    for (FxArg& x : a.items) shift(x);
  };
  for (FxNode& n : g.nodes) {
    for (FxArg& a : n.args) shift(a);
    for (auto& [k, v] : n.kwargs) shift(v);
  }
  g.nodes.insert(g.nodes.begin() + pos, std::move(node));
}

struct Matcher : FxMatch {
  using FxMatch::FxMatch;

  // Tries a match whose add is node k; rewrites and returns true on success.
  bool match(int k) {
    const FxNode* add = &g.nodes[k];
    if (!call(add, "aten.add.Tensor") || add->args.size() != 2 || !add->kwargs.empty()) return false;
    for (int side = 0; side < 2; ++side) {
      const FxArg &va = add->args[side], &ra = add->args[1 - side];
      const FxNode *v = node(va), *r = node(ra);
      if (!is_reshape(v) || !r || v->args.size() != 2 || uses[va.i] != 1) continue;
      const FxNode* m = node(v->args[0]);
      if (!call(m, "aten.mm.default") || m->args.size() != 2 || !m->kwargs.empty() || uses[v->args[0].i] != 1) continue;
      const FxTensor *mt = meta(m), *vt = meta(v), *rt = meta(r), *at = meta(add);
      if (!mt || !vt || !rt || !at || mt->shape.size() != 2 || vt->shape.empty()) continue;
      const int64_t M = mt->shape[0], N = mt->shape[1];
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < vt->shape.size(); ++d) rows *= vt->shape[d];
      if (vt->shape.back() != N || rows != M || rt->shape != vt->shape || at->shape != vt->shape) continue;
      if (rt->dtype != mt->dtype || at->dtype != mt->dtype || !rt->contiguous()) continue;
      const int mi = static_cast<int>(v->args[0].i), ri = static_cast<int>(ra.i);
      if (ri >= mi) continue;  // the view of r goes right before m
      rewrite(k, mi, ri, static_cast<int>(va.i), M, N);
      return true;
    }
    return false;
  }

  void rewrite(int a, int m, int r, int v, int64_t M, int64_t N) {
    FxNode view;
    view.name = g.nodes[r].name + "_" + g.nodes[m].name + "_residual";
    view.op = "call_function";
    view.target = "aten.view.default";
    view.args = {node_arg(r), int_list({M, N})};
    FxTensor t = *meta(&g.nodes[m]);
    t.stride = {N, 1};
    view.outputs = {t};
    insert_node(g, m, std::move(view));  // m, v and a move up by one
    ++m, ++v, ++a;
    FxNode& mm = g.nodes[m];
    mm.target = "aten.addmm.default";
    mm.args = {node_arg(m - 1), mm.args[0], mm.args[1]};
    FxNode& add = g.nodes[a];
    const FxNode& old_view = g.nodes[v];
    add.target = old_view.target;
    add.args = {old_view.args[0], old_view.args[1]};  // the reshape of m (now r + x @ w); v is left dead
  }
};

}  // namespace

int fuse_residual_add(FxGraph& g) { return rewrite_all<Matcher>(g); }

}  // namespace mk
