#include "trace/fuse_rope.h"

#include <optional>

#include "trace/fx_match.h"

namespace mk {

namespace {

struct Matcher : FxMatch {
  using FxMatch::FxMatch;

  // A node operand used only once (by the candidate pattern), calling `target`.
  const FxNode* only(const FxArg& a, const char* target) const {
    const FxNode* n = node(a);
    return call(n, target) && uses[a.i] == 1 ? n : nullptr;
  }
  static bool int_is(const FxArg& a, int64_t v) { return a.kind == FxArg::Kind::Int && a.i == v; }
  static bool last_dim(const FxArg& a, int64_t rank) { return int_is(a, -1) || int_is(a, rank - 1); }
  static bool float_dtype(const std::string& d) { return d == "bfloat16" || d == "float16" || d == "float32"; }
  // aten.slice.Tensor(X, last dim, start, end[, step]) of node X, used once: whether it is X[..., lo:hi:step]
  // for a last dim of D (hi == D also accepts any end >= D).
  bool slice_of(const FxArg& a, int64_t X, int64_t rank, int64_t D, int64_t lo, int64_t hi, int64_t step = 1) const {
    const FxNode* s = only(a, "aten.slice.Tensor");
    if (!s || !s->kwargs.empty() || s->args.size() < 4 || s->args.size() > 5) return false;
    if (!s->args[0].is_node() || s->args[0].i != X || !last_dim(s->args[1], rank)) return false;
    if (s->args.size() == 5 ? !int_is(s->args[4], step) : step != 1) return false;
    const bool start_ok = int_is(s->args[2], lo) || (lo == 0 && s->args[2].kind == FxArg::Kind::None);
    const FxArg& e = s->args[3];
    const bool end_ok = hi == D ? (e.kind == FxArg::Kind::None || (e.kind == FxArg::Kind::Int && e.i >= D))
                                : int_is(e, hi);
    return start_ok && end_ok;
  }
  // Whether node `v` (used once) is view(stack([neg(X[..., 1::2]), X[..., ::2]], -1), X's shape):
  // rotate_every_two(X), the pairs (2i, 2i + 1) rotating (GPT-J's and Cohere's layout).
  bool rotate_every_two(const FxArg& v, int64_t X) const {
    const FxNode* vw = node(v);
    if (!vw || uses[v.i] != 1 || !is_reshape(vw)) return false;
    const FxTensor* xm = meta(&g.nodes[X]);
    const FxTensor* vm = meta(vw);
    if (!xm || !vm || vm->shape != xm->shape || xm->shape.empty() || vw->args.size() != 2 || !vw->kwargs.empty())
      return false;
    // stack(parts, -1), or what megakittens/decompose.py makes of it: cat of the parts unsqueezed at -1.
    const int64_t rank = static_cast<int64_t>(xm->shape.size()), D = xm->shape.back();
    const auto new_last = [rank](const FxArg& d) { return int_is(d, -1) || int_is(d, rank); };
    const FxNode* st = only(vw->args[0], "aten.stack.default");
    const FxNode* cat = st ? nullptr : only(vw->args[0], "aten.cat.default");
    const FxNode* sc = st ? st : cat;
    if (!sc || D % 2 != 0 || !sc->kwargs.empty() || sc->args.size() != 2 || !new_last(sc->args[1])) return false;
    const FxArg& parts = sc->args[0];
    if (parts.kind != FxArg::Kind::List || parts.items.size() != 2) return false;
    FxArg part[2] = {parts.items[0], parts.items[1]};
    if (cat)
      for (FxArg& p : part) {  // unsqueeze(a, -1) used once: a
        const FxNode* u = only(p, "aten.unsqueeze.default");
        if (!u || u->args.size() != 2 || !u->kwargs.empty() || !new_last(u->args[1])) return false;
        p = u->args[0];
      }
    const FxNode* neg = only(part[0], "aten.neg.default");
    if (!neg || neg->args.size() != 1 || !neg->kwargs.empty()) return false;
    return slice_of(neg->args[0], X, rank, D, 1, D, 2) && slice_of(part[1], X, rank, D, 0, D, 2);
  }
  // Whether node `cat` (used once) is cat([neg(X[..., h:]), X[..., :h]], -1): rotate_half(X).
  bool rotate_half(const FxArg& cat, int64_t X) const {
    const FxNode* c = only(cat, "aten.cat.default");
    const FxTensor* xm = meta(&g.nodes[X]);
    if (!c || !xm || xm->shape.empty() || !c->kwargs.empty() || c->args.size() != 2) return false;
    const int64_t rank = static_cast<int64_t>(xm->shape.size()), D = xm->shape.back();
    if (D % 2 != 0 || !last_dim(c->args[1], rank)) return false;
    const FxArg& parts = c->args[0];
    if (parts.kind != FxArg::Kind::List || parts.items.size() != 2) return false;
    const FxNode* neg = only(parts.items[0], "aten.neg.default");
    if (!neg || neg->args.size() != 1 || !neg->kwargs.empty()) return false;
    return slice_of(neg->args[0], X, rank, D, D / 2, D) && slice_of(parts.items[1], X, rank, D, 0, D / 2);
  }
  // mul(a, b) used once: its operands.
  const FxNode* mul(const FxArg& a) const {
    const FxNode* m = only(a, "aten.mul.Tensor");
    return m && m->args.size() == 2 && m->kwargs.empty() && m->args[0].is_node() && m->args[1].is_node() ? m : nullptr;
  }
  // cos/sin operand C against X: a float tensor that broadcasts to X's shape, with X's last dim (or half
  // of it: `half`).
  bool table_for(const FxArg& c, const FxTensor& xm, bool half = false) const {
    const FxTensor* cm = meta(node(c));
    if (!cm || !float_dtype(cm->dtype) || cm->shape.empty() || cm->shape.size() > xm.shape.size() ||
        cm->shape.back() * (half ? 2 : 1) != xm.shape.back())
      return false;
    const size_t off = xm.shape.size() - cm->shape.size();
    for (size_t d = 0; d + 1 < cm->shape.size(); ++d)
      if (cm->shape[d] != 1 && cm->shape[d] != xm.shape[off + d]) return false;
    return true;
  }
  // c when table C is c.repeat_interleave(2, -1) as the graph spells it for a 4-D c (rank 5 inside):
  // view(clone(expand(unsqueeze(c, -1), [..., W, 2])), [..., 2W]), the inner nodes used once. The view
  // may have other users (q's and k's rotations share the tables); it stays for them and goes dead when
  // every user fused.
  std::optional<FxArg> repeated_pairs(const FxArg& C) const {
    const FxNode* vw = node(C);
    if (!vw || !is_reshape(vw) || vw->args.size() != 2) return std::nullopt;
    const FxNode* cl = only(vw->args[0], "aten.clone.default");
    const FxNode* ex = cl && cl->args.size() == 1 ? only(cl->args[0], "aten.expand.default") : nullptr;
    const FxNode* un = ex && ex->args.size() == 2 ? only(ex->args[0], "aten.unsqueeze.default") : nullptr;
    if (!un || un->args.size() != 2 || !un->args[0].is_node()) return std::nullopt;
    const FxTensor* cm = meta(node(un->args[0]));
    const FxTensor* em = meta(ex);
    const FxTensor* vm = meta(vw);
    if (!cm || !em || !vm || cm->shape.empty()) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(cm->shape.size());
    if (!(int_is(un->args[1], -1) || int_is(un->args[1], rank))) return std::nullopt;
    std::vector<int64_t> want = cm->shape, wide = cm->shape;
    want.push_back(2);
    wide.back() *= 2;
    if (em->shape != want || vm->shape != wide) return std::nullopt;
    return un->args[0];
  }

  // Tries a match whose add is node k; rewrites and returns true on success.
  bool match(int k) {
    const FxNode* add = &g.nodes[k];
    if (!call(add, "aten.add.Tensor") || add->args.size() != 2 || !add->kwargs.empty()) return false;
    for (int o = 0; o < 2; ++o) {
      const FxNode* m1 = mul(add->args[o]);      // X * C
      const FxNode* m2 = mul(add->args[1 - o]);  // rotate_half(X) * S
      if (!m1 || !m2) continue;
      for (int p = 0; p < 2; ++p)
        for (int q = 0; q < 2; ++q) {
          const int64_t X = m1->args[p].i;
          const bool half = rotate_half(m2->args[q], X);
          bool every = !half && rotate_every_two(m2->args[q], X);
          // Ernie4_5: X = x.float(), but the pairs rotate on x itself, cast after: float(rotate_every_two(x)).
          bool on_source = false;
          if (!half && !every) {
            const FxNode* c = only(m2->args[q], "aten._to_copy.default");
            const FxNode* xn = &g.nodes[X];
            every = on_source = c && cast_dtype(c) == "float32" && cast_dtype(xn) == "float32" && c->args.size() == 1 &&
                                xn->args[0].is_node() && rotate_every_two(c->args[0], xn->args[0].i);
          }
          if (!half && !every) continue;
          if (rewrite(k, X, m1->args[1 - p], m2->args[1 - q], !half, on_source)) return true;
        }
    }
    return false;
  }

  // on_source: the rotation read X's source (X = _to_copy(x, float32), used by the mul only): only the
  // cast form then (x.float() ... .type_as(x)).
  bool rewrite(int k, int64_t X, const FxArg& C, const FxArg& S, bool interleaved, bool on_source = false) {
    const FxTensor* xm = meta(&g.nodes[X]);
    const FxTensor* rm = meta(&g.nodes[k]);
    const FxTensor* cm = meta(node(C));
    const FxTensor* sm = meta(node(S));
    if (!xm || !rm || !cm || !sm || rm->shape != xm->shape || cm->shape != sm->shape || !table_for(C, *xm) ||
        !table_for(S, *xm))
      return false;
    // Interleaved tables widened by repeat_interleave: Rope reads the half-width sources (half_tables).
    const std::optional<FxArg> hc = interleaved ? repeated_pairs(C) : std::nullopt;
    const std::optional<FxArg> hs = hc ? repeated_pairs(S) : std::nullopt;
    const bool half = hs && table_for(*hc, *xm, true) && table_for(*hs, *xm, true) &&
                      meta(node(*hc))->shape == meta(node(*hs))->shape;  // table_for checked both metas
    FxArg x;
    x.kind = FxArg::Kind::Node;
    x.i = X;
    int result = k;
    // x.float() ... .type_as(x): the casts go too when X is used only by the pattern (mul, 2 slices).
    const FxNode* xn = &g.nodes[X];
    const int u = sole_user(k);
    const FxTensor* src = cast_dtype(xn) == "float32" ? meta(node(xn->args[0])) : nullptr;
    if (u >= 0 && uses[X] == (on_source ? 1 : 3) && src && rm->dtype == "float32" && float_dtype(src->dtype) &&
        cast_dtype(&g.nodes[u]) == src->dtype) {
      x = xn->args[0];
      result = u;
    } else if (on_source || rm->dtype != xm->dtype || !float_dtype(xm->dtype)) {
      return false;
    }
    FxNode& out = g.nodes[result];
    const FxArg c = half ? *hc : C, s = half ? *hs : S;  // copies: C and S live in nodes this rewrite may touch
    out.op = "call_function";
    out.target = interleaved ? "megakittens.rope_interleaved.default" : "megakittens.rope.default";
    out.args = {x, c, s};
    out.kwargs.clear();
    return true;
  }
};

}  // namespace

int fuse_rope(FxGraph& g) { return rewrite_all<Matcher>(g); }

}  // namespace mk
