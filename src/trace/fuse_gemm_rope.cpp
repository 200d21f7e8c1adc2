#include "trace/fuse_gemm_rope.h"

#include <memory>
#include <optional>

#include "itypes/attention.h"
#include "itypes/gemm.h"
#include "itypes/rope.h"
#include "trace/fuse_switches.h"

namespace mk {

namespace {

// The view r of a tensor produced as `meta`, as torch.as_strided arguments on that memory, left-padded
// to 4 dims (size 1, stride 0).
TensorRange::Strided strided_on(const TensorRange& r, const TensorMeta& meta) {
  TensorRange::Strided s = r.strided(r.backing(meta).padded());
  while (s.sizes.size() < 4) s.sizes.insert(s.sizes.begin(), 1), s.strides.insert(s.strides.begin(), 0);
  return s;
}

// x: the 4-D view of the Gemm's (M, N) output. Returns x's seq dim (2 or 1; the head dim is the other
// of dims 1, 2) when x is (B, H, S, D) or (B, S, H, D) in the Gemm's row-major memory: x[b, h, s, d] /
// x[b, s, h, d] at row b S + s, column h D + d.
std::optional<int> seq_dim(const TensorRange::Strided& x, int64_t M, int64_t N) {
  if (x.sizes.size() != 4 || x.offset != 0) return std::nullopt;
  const auto& z = x.sizes;
  const auto& t = x.strides;
  const int64_t D = z[3];
  if (t[3] != 1 || N % D != 0) return std::nullopt;
  for (int s : {1, 2}) {
    const int h = 3 - s;
    const bool heads = z[h] * D == N && (z[h] == 1 || t[h] == D);
    const bool rows = z[0] * z[s] == M && (z[s] == 1 || t[s] == N) && (z[0] == 1 || t[0] == z[s] * N);
    if (heads && rows) return s;
  }
  return std::nullopt;
}

// Whether the cos / sin view c (sizes broadcasting to x's) reads table row s, or b S + s, of D columns
// of its whole backing, for x's element (b, ., s, .) (seq along x dim `s`), broadcast over the heads.
bool table_view(const TensorRange::Strided& c, const std::vector<int64_t>& xs, int s, int64_t numel) {
  if (c.sizes.size() != 4 || c.offset != 0) return false;
  const int64_t D = xs[3], S = xs[s], B = xs[0];
  const int h = 3 - s;
  const auto& z = c.sizes;
  const auto& t = c.strides;
  if (z[3] != D || t[3] != 1 || z[s] != S || (S > 1 && t[s] != D)) return false;
  if (z[h] != 1 && t[h] != 0) return false;  // broadcast over the heads
  const bool per_batch = z[0] == B && B > 1 && t[0] == S * D;
  if (!per_batch && z[0] != 1 && t[0] != 0) return false;
  return numel == (per_batch ? B : 1) * S * D;  // the view covers its whole backing: rows m % T
}

// A reader's view of the Rope's whole (contiguous, 4-D) output: the permutation it applies, if that is
// all it does.
std::optional<std::vector<int64_t>> whole_permutation(const TensorRange& r, const TensorMeta& y) {
  if (r.alias || r.has_broadcast() || r.view_shape.size() != 4 || !(r.box == Box::of_shape(y.padded())))
    return std::nullopt;
  std::vector<int64_t> dims(4);
  for (int i = 0; i < 4; ++i) {
    if (r.view_dim[i] < 0 || r.view_shape[i] != y.shape[r.view_dim[i]]) return std::nullopt;
    dims[i] = r.view_dim[i];
  }
  return dims;
}

// Whether to fold a Rope of head dim D: by default where it measured faster (D 64; [Note: gemm rope
// epilogue] in kernels/mk/itypes/gemm.cuh has the measurements); MEGAKITTENS_FUSE=gemm_rope for every D,
// MEGAKITTENS_FUSE=no_gemm_rope for none.
bool enabled(int64_t D) { return fuse_switch("gemm_rope").value_or(D == 64); }

}  // namespace

int fuse_gemm_rope(DAG& dag) {
  std::vector<int> into(dag.nodes.size());
  int fused = 0;
  for (Node& u : dag.nodes) {
    into[u.id] = u.id;
    const auto* rope = u.is_compute() ? dynamic_cast<const Rope*>(u.itype.get()) : nullptr;
    if (!rope || rope->interleaved() || rope->half_tables() || u.inputs.size() != 3 || u.outputs.size() != 1) continue;
    const Edge &xe = u.inputs[0], &ce = u.inputs[1], &se = u.inputs[2];
    Node& g = dag.nodes[xe.node];
    const auto* gemm = g.is_compute() ? dynamic_cast<const Gemm*>(g.itype.get()) : nullptr;
    if (!gemm || g.outputs.size() != 1 || g.users[0].size() != 1 || xe.output != 0) continue;
    Gemm::Flags f = gemm->flags();
    if (f.swiglu || !f.act.empty() || f.bias == Gemm::Bias::full || f.rope != 0) continue;
    const TensorMeta& out = g.outputs[0];
    const Coord4 op = out.padded();
    const TensorMeta& y = u.outputs[0];
    if (op[0] * op[1] != 1 || y.shape.size() != 4 || y.dtype != out.dtype ||
        (y.dtype != DType::bf16 && y.dtype != DType::f16))
      continue;
    const int64_t D = y.shape[3];
    if ((D != 64 && D != 128) || !enabled(D)) continue;
    const auto x = strided_on(xe.range, out);
    const std::optional<int> s = seq_dim(x, op[2], op[3]);
    if (!s) continue;
    // The tables: of D's dtype, one shape, produced before g (it gains them as inputs), read as rows of D.
    const TensorMeta &cm = dag.nodes[ce.node].outputs[ce.output], &sm = dag.nodes[se.node].outputs[se.output];
    const TensorMeta cb = ce.range.backing(cm), sb = se.range.backing(sm);
    if (cm.dtype != out.dtype || sm.dtype != out.dtype || ce.node >= g.id || se.node >= g.id) continue;
    if (cb.shape != sb.shape || cb.shape.empty() || cb.shape.back() != D) continue;
    if (!table_view(strided_on(ce.range, cm), x.sizes, *s, cb.numel()) ||
        !table_view(strided_on(se.range, sm), x.sizes, *s, sb.numel()))
      continue;
    // Readers: Attention's q, k or v, reading the whole output (permuted at most).
    std::vector<std::pair<Use, TensorRange>> moved;
    bool ok = true;
    for (const Use& use : u.users[0]) {
      const Node& r = dag.nodes[use.node];
      const auto* at = r.is_compute() ? dynamic_cast<const Attention*>(r.itype.get()) : nullptr;
      const auto perm = at && use.input < 3 ? whole_permutation(r.inputs[use.input].range, y) : std::nullopt;
      if (!perm) {
        ok = false;
        break;
      }
      TensorRange v = xe.range.permute(*perm);
      if (!at->reads_view(use.input, v, v.backing(out).padded())) {
        ok = false;
        break;
      }
      moved.push_back({use, v});
    }
    if (!ok) continue;
    for (auto& [use, v] : moved) {
      Node& r = dag.nodes[use.node];
      r.inputs[use.input].range = v;
      std::vector<TensorRange> views;
      for (int k = 0; k < 3 && k < static_cast<int>(r.inputs.size()); ++k) views.push_back(r.inputs[k].range);
      const auto& at = static_cast<const Attention&>(*r.itype);
      r.itype = at.with_bshd(Attention::bshd_for(views) | (at.bshd() & Attention::kBshdO));
    }
    f.rope = static_cast<int>(D);
    for (const Edge* e : {&ce, &se}) {
      Edge t{e->node, e->output, TensorRange::full(e->range.backing(dag.nodes[e->node].outputs[e->output]).shape)};
      t.range.alias = e->range.alias;
      g.inputs.push_back(t);
    }
    g.itype = std::make_shared<Gemm>(f);
    into[u.id] = g.id;
    ++fused;
  }
  if (fused > 0) dag.fold_nodes(into);
  return fused;
}

}  // namespace mk
