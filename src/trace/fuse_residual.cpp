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
      if (!v || !r || uses[va.i] != 1) continue;
      // v = reshape(m) (3-D activations), or m itself (2-D: the seed MLP's x @ W[i] + b[i]).
      const bool reshaped = is_reshape(v);
      if (reshaped && v->args.size() != 2) continue;
      const FxArg ma = reshaped ? v->args[0] : va;
      const FxNode* m = node(ma);
      if (!call(m, "aten.mm.default") || m->args.size() != 2 || !m->kwargs.empty() || uses[ma.i] != 1) continue;
      const FxTensor *mt = meta(m), *vt = meta(v), *rt = meta(r), *at = meta(add);
      if (!mt || !vt || !rt || !at || mt->shape.size() != 2 || vt->shape.empty()) continue;
      const int64_t M = mt->shape[0], N = mt->shape[1];
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < vt->shape.size(); ++d) rows *= vt->shape[d];
      if (vt->shape.back() != N || rows != M || rt->shape != vt->shape || at->shape != vt->shape) continue;
      if (rt->dtype != mt->dtype || at->dtype != mt->dtype || !rt->contiguous()) continue;
      const int mi = static_cast<int>(ma.i), ri = static_cast<int>(ra.i);
      // The bias must be defined before m: r itself, or a copy of r when r is a view (b[i]) of a node
      // defined before m.
      const bool copy_r = ri >= mi;
      if (copy_r && !movable_view(*r, mi)) continue;
      rewrite(k, mi, ri, static_cast<int>(va.i), reshaped, copy_r, M, N);
      return true;
    }
    return false;
  }

  // A select / slice / reshape of a node defined before index `before` (a copy of it can move there).
  bool movable_view(const FxNode& r, int before) const {
    if (!(call(&r, "aten.select.int") || call(&r, "aten.slice.Tensor") || is_reshape(&r)) || r.args.empty()) return false;
    for (size_t i = 0; i < r.args.size(); ++i)
      if (r.args[i].is_node() && r.args[i].i >= before) return false;
    return r.args[0].is_node();
  }

  void rewrite(int a, int m, int r, int v, bool reshaped, bool copy_r, int64_t M, int64_t N) {
    const std::string base = g.nodes[r].name + "_" + g.nodes[m].name + "_residual";
    int bias = r;
    if (copy_r) {  // r comes after m: a copy of its view goes right before m
      FxNode c = g.nodes[r];
      c.name = base + "_src";
      insert_node(g, m++, std::move(c));  // m, a and v move up by one
      ++a, ++v;
      bias = m - 1;
    }
    if (reshaped) {  // the bias as (M, N): a view of r
      FxNode view;
      view.name = base;
      view.op = "call_function";
      view.target = "aten.view.default";
      view.args = {node_arg(bias), int_list({M, N})};
      FxTensor t = *meta(&g.nodes[m]);
      t.stride = {N, 1};
      view.outputs = {t};
      insert_node(g, m++, std::move(view));
      ++a, ++v;
      bias = m - 1;
    }
    FxNode& mm = g.nodes[m];
    mm.target = "aten.addmm.default";
    mm.args = {node_arg(bias), mm.args[0], mm.args[1]};
    FxNode& add = g.nodes[a];
    if (reshaped) {
      const FxNode& old_view = g.nodes[v];
      add.target = old_view.target;
      add.args = {old_view.args[0], old_view.args[1]};  // the reshape of m (now r + x @ w); v is left dead
    } else {
      add.target = "aten.view.default";  // m itself (now r + x @ w), as a view of its own shape
      add.args = {node_arg(m), int_list({M, N})};
    }
  }
};

}  // namespace

int fuse_residual_add(FxGraph& g) { return rewrite_all<Matcher>(g); }

}  // namespace mk
