#include "trace/fuse_rms_norm.h"

#include <optional>

#include "trace/fx_match.h"

namespace mk {

namespace {

struct Matcher : FxMatch {
  using FxMatch::FxMatch;

  static std::optional<double> number(const FxArg& a) {
    if (a.kind == FxArg::Kind::Float) return a.f;
    if (a.kind == FxArg::Kind::Int) return static_cast<double>(a.i);
    return std::nullopt;
  }
  // The operand of binary mul `n` that is not node `other`, when the other one is.
  const FxArg* other_operand(const FxNode* n, int other) const {
    if (!call(n, "aten.mul.Tensor") || n->args.size() != 2 || !n->kwargs.empty()) return nullptr;
    if (n->args[0].is_node() && n->args[0].i == other) return &n->args[1];
    if (n->args[1].is_node() && n->args[1].i == other) return &n->args[0];
    return nullptr;
  }

  // Tries a match whose rsqrt is node r; rewrites and returns true on success.
  bool match(int r) {
    const FxNode* rs = &g.nodes[r];
    if (!call(rs, "aten.rsqrt.default") || rs->args.size() != 1 || uses[r] != 1) return false;
    const FxNode* add = node(rs->args[0]);
    if (!(call(add, "aten.add.Tensor") || call(add, "aten.add.Scalar")) || add->args.size() != 2 ||
        !add->kwargs.empty() || uses[rs->args[0].i] != 1)
      return false;
    const std::optional<double> eps = number(add->args[1]);
    const FxNode* mean = node(add->args[0]);
    if (!eps || !call(mean, "aten.mean.dim") || mean->args.size() != 3 || !mean->kwargs.empty() ||
        uses[add->args[0].i] != 1)
      return false;
    // The square: pow(h, 2) (HF), or h * h (gpt-fast), which refers to h twice.
    const FxNode* sq = node(mean->args[0]);
    if (!sq || uses[mean->args[0].i] != 1 || sq->args.size() != 2 || !sq->kwargs.empty() || !sq->args[0].is_node())
      return false;
    const int h = static_cast<int>(sq->args[0].i);
    int h_uses = 0;  // references to h: the square's, and h * rsqrt
    if (call(sq, "aten.pow.Tensor_Scalar") && number(sq->args[1]) == 2.0) h_uses = 2;
    else if (call(sq, "aten.mul.Tensor") && sq->args[1].is_node() && sq->args[1].i == h) h_uses = 3;
    else return false;
    const FxNode* hn = &g.nodes[h];
    if (cast_dtype(hn) != "float32" || uses[h] != h_uses) return false;
    const FxNode* x = node(hn->args[0]);
    const FxTensor* xm = meta(x);
    const FxTensor* hm = meta(hn);
    if (!xm || !hm || (xm->dtype != "bfloat16" && xm->dtype != "float16")) return false;
    // mean over the last dim, keepdim
    const int64_t rank = static_cast<int64_t>(hm->shape.size());
    const FxArg& dims = mean->args[1];
    const FxArg& keep = mean->args[2];
    if (dims.kind != FxArg::Kind::List || dims.items.size() != 1 || dims.items[0].kind != FxArg::Kind::Int ||
        !(dims.items[0].i == -1 || dims.items[0].i == rank - 1) || keep.kind != FxArg::Kind::Bool || !keep.i)
      return false;
    // m = h * rsqrt(...)
    const int m = sole_user(r);
    if (m < 0) return false;
    const FxArg* mh = other_operand(&g.nodes[m], r);
    if (!mh || !mh->is_node() || mh->i != h) return false;

    const int u = sole_user(m);
    if (u < 0) return false;
    const FxNode* un = &g.nodes[u];
    FxArg weight;  // None unless a weight multiply matches
    int result = -1;
    // The weight RMSNorm takes: a (C,) tensor in x's dtype (RMSNorm reads it so). Gemma's fp32 `1 + w.float()`,
    // or a weight that broadcasts from another shape ((1, C), ...), stays a multiply of its own.
    const auto weight_ok = [&](const FxArg* w) {
      const auto* wm = w && w->is_node() ? meta(node(*w)) : nullptr;
      return wm && wm->dtype == xm->dtype && wm->shape == std::vector<int64_t>{xm->shape.back()};
    };
    if (cast_dtype(un) == xm->dtype) {  // cast back, then maybe the weight in x's dtype (HF)
      result = u;
      const int y = sole_user(u);
      if (y >= 0)
        if (const FxArg* w = other_operand(&g.nodes[y], u); weight_ok(w)) {
          weight = *w;
          result = y;
        }
    } else if (const FxArg* w = other_operand(un, m); w && w->is_node()) {  // weight in fp32, then cast (F.rms_norm)
      const int c = sole_user(u);
      if (c < 0 || cast_dtype(&g.nodes[c]) != xm->dtype || !weight_ok(w)) return false;
      weight = *w;
      result = c;
    } else {
      return false;
    }
    FxNode& out = g.nodes[result];
    FxArg eps_arg;
    eps_arg.kind = FxArg::Kind::Float;
    eps_arg.f = *eps;
    out.op = "call_function";
    out.target = "megakittens.rms_norm.default";
    out.args = {hn->args[0], weight, eps_arg};
    out.kwargs.clear();
    return true;
  }
};

}  // namespace

int fuse_decomposed_rms_norm(FxGraph& g) { return rewrite_all<Matcher>(g); }

}  // namespace mk
