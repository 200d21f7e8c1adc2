#include "trace/fuse_swiglu.h"

#include <algorithm>

#include "trace/fx_match.h"

namespace mk {

namespace {

bool same_arg(const FxArg& a, const FxArg& b) {
  if (a.kind != b.kind || a.i != b.i || a.f != b.f || a.s != b.s || a.items.size() != b.items.size()) return false;
  for (size_t k = 0; k < a.items.size(); ++k)
    if (!same_arg(a.items[k], b.items[k])) return false;
  return true;
}

struct Matcher : FxMatch {
  using FxMatch::FxMatch;

  // One side of the product: the mm under `a` (through an optional reshape, whose node is returned
  // in `view`, -1 if none), used only along this path; -1 if `a` is not such a product.
  int product(const FxArg& a, int& view) const {
    const FxNode* n = node(a);
    if (!n || uses[a.i] != 1) return -1;
    view = -1;
    if (is_reshape(n)) {
      if (n->args.size() != 2 || !n->args[0].is_node() || uses[n->args[0].i] != 1) return -1;
      view = static_cast<int>(a.i);
      return call(node(n->args[0]), "aten.mm.default") ? static_cast<int>(n->args[0].i) : -1;
    }
    return call(n, "aten.mm.default") ? static_cast<int>(a.i) : -1;
  }
  // A bfloat16 or float16 result (the Gemm's operand types), of the same dtype as `like`'s when given.
  bool half(const FxNode* n, const FxNode* like = nullptr) const {
    const FxTensor* t = meta(n);
    if (!t || (t->dtype != "bfloat16" && t->dtype != "float16")) return false;
    const FxTensor* u = like ? meta(like) : nullptr;
    return !like || (u && u->dtype == t->dtype);
  }
  // The A operands of the two mms are one node, or the same reshape of one node.
  bool same_a(const FxArg& x, const FxArg& y) const {
    if (!x.is_node() || !y.is_node()) return false;
    if (x.i == y.i) return true;
    const FxNode *p = node(x), *q = node(y);
    return is_reshape(p) && p->target == q->target && p->args.size() == q->args.size() && p->kwargs.empty() &&
           q->kwargs.empty() && same_arg(p->args[0], q->args[0]) &&
           (p->args.size() < 2 || same_arg(p->args[1], q->args[1]));
  }

  bool match(int k) {
    const FxNode* mul = &g.nodes[k];
    if (!call(mul, "aten.mul.Tensor") || mul->args.size() != 2 || !mul->kwargs.empty() || !half(mul)) return false;
    for (int side = 0; side < 2; ++side) {
      const FxArg &sa = mul->args[side], &ua = mul->args[1 - side];
      const FxNode* silu = node(sa);
      if (!call(silu, "aten.silu.default") || silu->args.size() != 1 || !silu->kwargs.empty() || uses[sa.i] != 1)
        continue;
      int gv = -1, uv = -1;
      const int gm = product(silu->args[0], gv), um = product(ua, uv);
      if (gm < 0 || um < 0 || gm == um || (gv < 0) != (uv < 0)) continue;
      const FxNode &g_mm = g.nodes[gm], &u_mm = g.nodes[um];
      if (g_mm.args.size() != 2 || u_mm.args.size() != 2 || !g_mm.kwargs.empty() || !u_mm.kwargs.empty()) continue;
      if (!same_a(g_mm.args[0], u_mm.args[0])) continue;
      const FxTensor *gt = meta(&g_mm), *ut = meta(&u_mm), *yt = meta(mul), *st = meta(silu);
      if (!gt || !ut || !st || gt->shape != ut->shape || gt->shape.size() != 2 || st->shape != yt->shape ||
          !half(&g_mm, mul) || !half(&u_mm, mul) || !half(silu, mul))
        continue;
      if (gv >= 0 && (!same_arg(g.nodes[gv].args[1], g.nodes[uv].args[1]) || meta(&g.nodes[uv])->shape != yt->shape))
        continue;
      if (gv < 0 && ut->shape != yt->shape) continue;
      rewrite(k, gm, um);
      return true;
    }
    return false;
  }

  // The later mm becomes the fused Gemm (every operand is defined before it); y becomes its view.
  void rewrite(int y, int gm, int um) {
    const int at = std::max(gm, um);
    FxArg x = g.nodes[at].args[0], bg = g.nodes[gm].args[1], bu = g.nodes[um].args[1];
    FxNode& m = g.nodes[at];
    m.target = "megakittens.gemm_swiglu.default";
    m.args = {x, bg, bu};
    FxNode& out = g.nodes[y];
    out.target = "aten.view.default";
    out.args = {node_arg(at), int_list(out.outputs[0]->shape)};
  }
};

}  // namespace

int fuse_swiglu(FxGraph& g) { return rewrite_all<Matcher>(g); }

}  // namespace mk
