#include "itypes/gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "ir/error.h"
#include "itypes/elementwise.h"

namespace mk {

namespace {

// TMA needs every row of the backing tensor to start 16-byte aligned.
void require_tma_rows(const NodeInfo& n, const char* what, const char* dim, int64_t row_elems) {
  if (row_elems * 2 % 16 != 0)
    fail("node '", n.name, "' (", n.target, "): row stride of ", what,
         " must be a multiple of 16 bytes for TMA, got ", dim, "=", row_elems, " elements");
}

// One instruction's place in the node: batch (b, d), cluster-tile row mt, column tile nt, rank.
struct GemmTile {
  int64_t b, d, mt, nt, rank;
};

GemmTile gemm_tile(const Coord4& ds, int64_t MT, int64_t NT, int64_t G, int64_t i) {
  constexpr int64_t kSuper = 8;  // column tiles per supergroup (L2 reuse of the B panels)
  GemmTile t;
  t.rank = i % G;
  int64_t c = i / G;
  const int64_t batch = c / (MT * NT);
  c %= MT * NT;
  t.b = batch / ds[1];
  t.d = batch % ds[1];
  const int64_t sg = c / (MT * kSuper);  // every supergroup but the last is kSuper wide
  const int64_t w = std::min(kSuper, NT - sg * kSuper);
  c -= sg * MT * kSuper;
  t.mt = c / w;
  const int64_t k = c % w;
  t.nt = sg * kSuper + (t.mt % 2 == 0 ? k : w - 1 - k);  // serpentine
  return t;
}

Box rows_box(int64_t b, int64_t d, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  return {{b, d, r0, c0}, {b + 1, d + 1, r1, c1}};
}

}  // namespace

std::string Gemm::params() const {
  std::string p;
  auto add = [&p](const char* w) { p += (p.empty() ? "" : ",") + std::string(w); };
  if (flags_.transpose_a) add("ta");
  if (flags_.transpose_b) add("tb");
  if (flags_.bias == Bias::row) add("bias_row");
  if (flags_.bias == Bias::full) add("bias_full");
  if (flags_.swiglu) add("swiglu");
  if (!flags_.act.empty()) add(("act=" + flags_.act).c_str());
  if (flags_.rope != 0) add(("rope=" + std::to_string(flags_.rope)).c_str());
  if (flags_.rms_in) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "rms_in=%.9g", *flags_.rms_in);
    add(buf);
  }
  if (flags_.f16) add("f16");
  return p;
}

bool Gemm::is_transposed(const TensorRange& r) {
  const Coord4 v = r.view_padded();
  bool straight = true, swapped = true;
  for (int k = 2; k < 4; ++k) {
    if (v[k] <= 1) continue;
    straight &= r.view_dim[k] == k;
    swapped &= r.view_dim[k] == 5 - k;
  }
  return swapped && !straight;
}

Gemm::Flags Gemm::flags_for(const std::vector<TensorRange>& in, bool swiglu, bool f16) {
  Flags f;
  f.swiglu = swiglu;
  f.f16 = f16;
  if (in.size() > 0) f.transpose_a = is_transposed(in[0]);
  if (in.size() > 1) f.transpose_b = is_transposed(in[1]);
  if (in.size() > 2 && !swiglu) f.bias = in[2].view_padded()[2] == 1 ? Bias::row : Bias::full;
  return f;
}

bool Gemm::reads_view(int k, const TensorRange& r, const Coord4&) const {
  const Coord4 v = r.view_padded();
  for (int d = 0; d < 2; ++d)
    if (v[d] > 1 && r.view_dim[d] != d) return false;
  return !r.has_broadcast() && (tile_view(r) || ((k < 2 || (k == 2 && flags_.swiglu)) && is_transposed(r)));
}

namespace {

// How a Gemm operand's view must sit on its backing: batch dims straight, the last two dims straight
// or (flag set) swapped, so that the kernel addresses a tile as origin + extents on the backing's last
// two dims. `flag` names the flag that allows the swapped layout ("" when none does, e.g. the bias).
void require_gemm_view(const NodeInfo& n, const char* what, const Operand& op, bool transposed, const char* flag) {
  const Coord4 v = op.padded();
  const auto& vd = op.range.view_dim;
  for (int k = 0; k < 2; ++k)
    if (v[k] > 1 && vd[k] != k)
      fail("node '", n.name, "' (", n.target, "): ", what, " view ", op.range.str(), " of ", op.backing.str(),
           ": batch dims must run along the backing's batch dims in order (no permuted batches), got view dim ",
           k, " on backing dim ", int(vd[k]));
  bool ok = true;
  for (int k = 2; k < 4; ++k)
    if (v[k] > 1 && vd[k] != (transposed ? 5 - k : k)) ok = false;
  if (ok) return;
  const bool swapped = Gemm::is_transposed(op.range);
  if (swapped && *flag)
    fail("node '", n.name, "' (", n.target, "): ", what, " view ", op.range.str(), " of ", op.backing.str(),
         " is transposed (its last two dims run along the backing's last two dims swapped), but this Gemm lacks the '",
         flag, "' flag");
  if (swapped)
    fail("node '", n.name, "' (", n.target, "): ", what, " view ", op.range.str(), " of ", op.backing.str(),
         " must not be transposed (it has no transpose flag)");
  fail("node '", n.name, "' (", n.target, "): ", what, " view ", op.range.str(), " of ", op.backing.str(),
       " must keep its last two dims on the backing tensor's last two dims", *flag ? " (straight, or swapped with the '" : "",
       *flag ? flag : "", *flag ? "' flag)" : "", ", got view dims 2, 3 on backing dims ", int(vd[2]), ", ", int(vd[3]),
       transposed ? " (the Gemm expects it transposed)" : "");
}

}  // namespace

void Gemm::validate_rope(const NodeInfo& n) const {
  const int64_t D = flags_.rope;
  const auto& out = n.outputs[0];
  const Coord4 dv = out.padded();
  if (D != 64 && D != 128)
    fail("node '", n.name, "' (", n.target, "): the 'rope' epilogue supports head dims 64 and 128, got rope=", D);
  if (flags_.swiglu || !flags_.act.empty() || flags_.bias == Bias::full)
    fail("node '", n.name, "' (", n.target, "): the 'rope' epilogue goes with no swiglu, act or bias_full (flags ",
         params(), ")");
  if (dv[0] * dv[1] != 1 || dv[3] % D != 0)
    fail("node '", n.name, "' (", n.target, "): the 'rope' epilogue needs a 2-D output whose N is a multiple of the ",
         "head dim ", D, ", got ", out.str());
  // A tile rotates whole heads: its columns start on a head and span whole heads.
  const Profile& p = n.profile;
  if (p.gemm_n % D != 0 || (p.gemm_n_narrow > 0 && p.gemm_n_narrow % D != 0))
    fail("node '", n.name, "' (", n.target, "): the 'rope' epilogue needs Gemm tiles of whole heads: gemm_n ", p.gemm_n,
         " and gemm_n_narrow ", p.gemm_n_narrow, " must be multiples of the head dim ", D);
  const int k = rope_input();
  for (int t = 0; t < 2; ++t) {
    const Operand& c = n.inputs[k + t];
    const char* what = t == 0 ? "rope cos table" : "rope sin table";
    require_dtype(n, what, c.dtype(), half_dtype(flags_.f16));
    const int64_t T = c.backing.numel() / D;
    if (!c.range.is_full(c.backing.padded()) || c.backing.shape.back() != D || T < 1 || dv[2] % T != 0)
      fail("node '", n.name, "' (", n.target, "): the ", what, " must be a whole tensor of T rows of D=", D,
           " elements with T dividing M=", dv[2], ", got view ", c.range.str(), " of ", c.backing.str());
  }
  if (n.inputs[k].backing.shape != n.inputs[k + 1].backing.shape)
    fail("node '", n.name, "' (", n.target, "): the rope cos table ", n.inputs[k].backing.str(),
         " and sin table ", n.inputs[k + 1].backing.str(), " must have one shape");
}

// [Note: gemm rms_in] kernels/mk/itypes/gemm.cuh.
void Gemm::validate_rms_in(const NodeInfo& n) const {
  if (!flags_.rms_in) return;
  if (flags_.f16)
    fail("node '", n.name, "' (", n.target, "): the rms_in Gemm is bfloat16 only (flags ", params(), ")");
  const Operand& a = n.inputs[0];
  const Coord4 av = a.padded();
  if (flags_.transpose_a || av[0] * av[1] != 1 || a.range.view_shape.size() != 2 || a.backing.padded() != av ||
      !a.range.is_full(av) || av[3] % 8 != 0)
    fail("node '", n.name, "' (", n.target, "): the rms_in Gemm needs A as a whole 2-D (M, K) tensor, not ",
         "transposed, K a multiple of 8 (the norm's rows), got view ", a.range.str(), " of ", a.backing.str());
  const Operand& w = n.inputs[rms_w_input()];
  require_dtype(n, "rms weight", w.dtype(), DType::bf16);
  if (w.shape() != std::vector<int64_t>{av[3]} || !w.range.is_full(w.backing.padded()))
    fail("node '", n.name, "' (", n.target, "): the rms weight must be a whole (K,) tensor with K=", av[3],
         ", got view ", w.range.str(), " of ", w.backing.str());
}

void Gemm::validate(const NodeInfo& n) const {
  const bool has_bias = flags_.bias != Bias::none;
  if (!flags_.act.empty()) {
    const UnaryStep act = UnaryStep::parse(flags_.act);
    if (act.has_k || act.op == UnaryStep::Op::identity || flags_.swiglu)
      fail("node '", n.name, "' (", n.target, "): the Gemm epilogue's activation must be a unary op without a "
           "constant and not identity, on a Gemm without swiglu, got act=", flags_.act, " (flags ", params(), ")");
  }
  if (has_bias && flags_.swiglu)
    fail("node '", n.name, "' (", n.target, "): the 'swiglu' Gemm has no bias epilogue (got flags ", params(), ")");
  require_inputs(n, static_cast<size_t>(num_inputs()));
  if (n.outputs.size() != 1u)
    fail("node '", n.name, "' (", n.target, "): expects 1 output (flags ", params(), "), got ", n.outputs.size());
  const Operand &a = n.inputs[0], &b = n.inputs[1];
  const auto& out = n.outputs[0];
  const DType dt = half_dtype(flags_.f16);
  const auto half = [](DType t) { return t == DType::bf16 || t == DType::f16; };
  if (a.dtype() != b.dtype() && half(a.dtype()) && half(b.dtype()))
    fail("node '", n.name, "' (", n.target, "): the operands of a matrix product share one dtype (bfloat16 or float16), ",
         "got input A ", dtype_name(a.dtype()), " and input B ", dtype_name(b.dtype()),
         " (eager refuses this product too: cast one of them)");
  require_dtype(n, "input A", a.dtype(), dt);
  require_dtype(n, "input B", b.dtype(), dt);
  require_dtype(n, "output D", out.dtype, dt);
  require_rank(n, "input A", a.shape(), 2, 4);
  require_rank(n, "input B", b.shape(), 2, 4);
  require_rank(n, "output D", out.shape, 2, 4);
  const auto &as = a.shape(), &bs = b.shape();
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    fail("node '", n.name, "' (", n.target, "): K of A (", K, ") must equal K of B (", bs[bs.size() - 2],
         "), shapes ", shape_str(as), " @ ", shape_str(bs));
  const std::vector<int64_t> lead_a(as.begin(), as.end() - 2), lead_b(bs.begin(), bs.end() - 2);
  if (lead_a != lead_b)
    fail("node '", n.name, "' (", n.target, "): leading dims of A ", shape_str(lead_a), " and B ",
         shape_str(lead_b), " must be equal (broadcasting is not supported yet)");
  std::vector<int64_t> want = lead_a;
  want.push_back(M);
  want.push_back(N);
  if (out.shape != want)
    fail("node '", n.name, "' (", n.target, "): output shape must be ", shape_str(want), ", got ",
         shape_str(out.shape));
  require_gemm_view(n, "input A", a, flags_.transpose_a, "ta");
  require_gemm_view(n, "input B", b, flags_.transpose_b, "tb");
  // TMA: the backing's rows are K (A) / N (B) long, or M (A^T) / K (B^T) when transposed.
  require_tma_rows(n, "A", flags_.transpose_a ? "M" : "K", a.backing.shape.back());
  require_tma_rows(n, "B", flags_.transpose_b ? "K" : "N", b.backing.shape.back());
  require_tma_rows(n, "D", "N", out.shape.back());
  if (flags_.swiglu) {
    // B2 is loaded with B's tile coordinates on its own backing: same dtype, backing shape and view.
    const Operand& b2 = n.inputs[2];
    require_dtype(n, "input B2", b2.dtype(), dt);
    if (b2.shape() != b.shape())
      fail("node '", n.name, "' (", n.target, "): input B2 ", shape_str(b2.shape()), " must have input B's shape ",
           shape_str(b.shape()), " for the 'swiglu' flag");
    const TensorRange &r = b.range, &r2 = b2.range;
    if (b2.backing.padded() != b.backing.padded() || !(r2 == r))
      fail("node '", n.name, "' (", n.target, "): input B2 view ", r2.str(), " of ", b2.backing.str(),
           " must sit on its backing exactly as input B ", r.str(), " sits on ", b.backing.str(),
           " (the 'swiglu' Gemm loads both with the same tile coordinates)");
    validate_rms_in(n);
    return;
  }
  if (flags_.rope != 0) validate_rope(n);
  validate_rms_in(n);
  if (!has_bias) return;

  const Operand& c = n.inputs[2];
  const bool row = flags_.bias == Bias::row;
  require_dtype(n, "bias", c.dtype(), dt);
  require_rank(n, "bias", c.shape(), 1, 4);
  const Coord4 cv = c.padded(), dv = out.padded();
  bool ok = cv[3] == N && cv[2] == (row ? 1 : M);
  for (int k = 0; k < 2; ++k) ok &= cv[k] == 1 || cv[k] == dv[k];
  if (static_cast<int>(c.shape().size()) > static_cast<int>(out.shape.size())) ok = false;
  if (!ok)
    fail("node '", n.name, "' (", n.target, "): bias shape ", shape_str(c.shape()), " must be ",
         row ? "[N] or [1, N]" : "[M, N]", " with N=", N, row ? "" : ", M=", row ? "" : std::to_string(M),
         " (leading dims 1 or those of D ", shape_str(out.shape), ") for the '", row ? "bias_row" : "bias_full",
         "' flag");
  require_gemm_view(n, "bias", c, false, "");
  require_tma_rows(n, "bias", "N", c.backing.shape.back());
  if (c.backing.numel() > INT32_MAX)
    fail("node '", n.name, "' (", n.target, "): the bias backing tensor ", c.backing.str(),
         " has more than 2^31 elements (its origin is one int32 element offset)");
}

namespace {
// A narrow tile's time relative to a gemm_n-wide one: half the MMA work, the same A traffic
// (kernels/mk/itypes/gemm.cuh runs m64n128k16 for it). Measured on the H200 (2026-12-01,
// benchmarks/notes.md "Session 5"): a 1024-row down projection (K 8192) took 95 us per narrow tile and
// 124 us per wide one.
constexpr double kGemmNarrowCost = 0.77;

// The tile width for N columns when `row_ctas` CTAs share each column of tiles (batch x M tiles x
// cluster): Profile::gemm_n_narrow when its waves over num_sms SMs, at kGemmNarrowCost each, take
// less time than the waves of gemm_n-wide tiles (a 1024 x 2048 output is 64 wide tiles, half of an
// H200 idle, or 128 narrow ones). `group_n`: the N of every Gemm reading the same A (NodeInfo::
// gemm_group_n; empty: this one alone), whose tiles share the waves: a 1B layer's q, k and v (N 2048,
// 512, 512 at M 1024) are 192 narrow tiles, two waves, or 96 wide ones, one wave.
int64_t gemm_tile_n(const Profile& p, int64_t row_ctas, int64_t N, const std::vector<int64_t>& group_n) {
  const int64_t wide = p.gemm_n, narrow = p.gemm_n_narrow;
  if (narrow <= 0 || narrow >= wide || p.num_sms < 1) return wide;
  const auto waves = [&](int64_t tn) {
    int64_t tiles = 0;
    for (int64_t n : group_n.empty() ? std::vector<int64_t>{N} : group_n) tiles += row_ctas * ceil_div(n, tn);
    return ceil_div(tiles, int64_t{p.num_sms});
  };
  return static_cast<double>(waves(narrow)) * kGemmNarrowCost < static_cast<double>(waves(wide)) ? narrow : wide;
}

struct GemmDims {
  Coord4 ds;  // padded output (B, D, M, N)
  int64_t K, G, cm, tn, MT, NT;
};
GemmDims gemm_dims(const NodeInfo& n, bool swiglu) {
  GemmDims g;
  g.ds = n.outputs[0].padded();
  g.K = n.inputs[0].padded()[3];
  g.G = std::max(1, n.cluster_size);
  g.cm = n.profile.gemm_cta_m;
  g.MT = ceil_div(g.ds[2], g.G * g.cm);
  // swiglu: a tile's B panel is gemm_n wide, half B's columns and half B2's (the same output columns).
  g.tn = swiglu ? std::max<int64_t>(1, n.profile.gemm_n / 2)
                : gemm_tile_n(n.profile, g.ds[0] * g.ds[1] * g.MT * g.G, g.ds[3], n.gemm_group_n);
  g.NT = ceil_div(g.ds[3], g.tn);
  return g;
}
// Split-K cost model, in k-steps of a wide tile (~1 us each for a 128x256x64 step on the H200,
// benchmarks/notes.md "Session 6"): a tile costs its k-steps plus kEpilogueSteps (accumulators to
// bf16, the store), each split after the first Profile::gemm_split_chain_steps more (its epilogue
// waits for the previous split's stores: the chain's latency; 8.7 us per link in the (1024, 1024)
// MLP's timeline, benchmarks/notes.md "Session 8"). A split must save at least kSplitGain of the
// unsplit time.
constexpr double kEpilogueSteps = 3, kSplitGain = 0.9;
}  // namespace

int64_t Gemm::split_k_chunk(int64_t K, int splits, int gemm_k) {
  return ceil_div(ceil_div(K, int64_t{splits}), int64_t{gemm_k}) * gemm_k;
}

int Gemm::split_k(const NodeInfo& n) const {
  const Profile& p = n.profile;
  // f16: each split's partial sum is rounded to D's dtype, and fp16's range (65504) is not fp32's: partial sums
  // that cancel later would overflow to inf where eager's one fp32 accumulation does not.
  if (flags_.swiglu || flags_.rope != 0 || flags_.rms_in || flags_.f16 || !n.gemm_group_n.empty() ||
      p.gemm_split_k <= 1 || p.num_sms < 1 || p.gemm_k < 1)
    return 1;
  const GemmDims g = gemm_dims(n, false);
  const int64_t row_ctas = g.ds[0] * g.ds[1] * g.MT * g.G;
  if (row_ctas == 0 || g.ds[3] == 0) return 1;
  const auto cost = [&](int s) {
    const int64_t tn = gemm_tile_n(p, row_ctas * s, g.ds[3], {});
    const int64_t waves = ceil_div(row_ctas * s * ceil_div(g.ds[3], tn), int64_t{p.num_sms});
    const double steps = static_cast<double>(ceil_div(split_k_chunk(g.K, s, p.gemm_k), int64_t{p.gemm_k}));
    return static_cast<double>(waves) * (steps + kEpilogueSteps) * (tn < p.gemm_n ? kGemmNarrowCost : 1.0) +
           (s - 1) * static_cast<double>(p.gemm_split_chain_steps);
  };
  int best = 1;
  const double unsplit = cost(1);
  double best_cost = unsplit * kSplitGain;
  // Every split needs K left for it: (s - 1) chunks must end before K.
  for (int s = 2; s <= p.gemm_split_k && split_k_chunk(g.K, s, p.gemm_k) * (s - 1) < g.K; ++s)
    if (const double c = cost(s); c < best_cost) best = s, best_cost = c;
  return best;
}

int64_t Gemm::num_instructions(const NodeInfo& n) const {
  const GemmDims g = gemm_dims(n, flags_.swiglu);
  return g.ds[0] * g.ds[1] * g.MT * g.NT * g.G;
}

InstrDesc Gemm::instruction(const NodeInfo& n, int64_t i) const {
  const GemmDims g = gemm_dims(n, flags_.swiglu);
  const int64_t M = g.ds[2], N = g.ds[3];
  const GemmTile t = gemm_tile(g.ds, g.MT, g.NT, g.G, i);
  const int64_t m0 = t.mt * g.G * g.cm, n0 = t.nt * g.tn;
  const int64_t m = m0 + t.rank * g.cm;  // this rank's first row
  const int64_t m_rows = std::clamp<int64_t>(M - m, 0, g.cm), n_cols = std::min(g.tn, N - n0);

  // Origins are backing points of the view points below; for a transposed operand the same view
  // point lands on the backing with its row and column swapped (A^T: (b, d, 0, m); B^T: (b, d, n0, 0)).
  InstrDesc d;
  push_origin(d.indices, n.inputs[0].origin({t.b, t.d, m, 0}));
  push_origin(d.indices, n.inputs[1].origin({t.b, t.d, 0, n0}));
  push_origin(d.indices, {t.b, t.d, m, n0});
  // Word 12: m_rows, and in bit 16 whether the cluster tile's other rank has rows too (the pair then
  // shares its B panel: kernels/mk/itypes/gemm.cuh [Note: gemm multicast]).
  const int64_t other_rows = g.G == 2 ? std::clamp<int64_t>(M - (m0 + (1 - t.rank) * g.cm), 0, g.cm) : 0;
  const bool shares_b = g.G == 2 && m_rows > 0 && other_rows > 0 && g.K > 0;
  d.indices.push_back(static_cast<int32_t>(m_rows | (shares_b ? int64_t{1} << 16 : 0)));
  d.indices.push_back(static_cast<int32_t>(n_cols));
  d.indices.push_back(static_cast<int32_t>(g.K));

  // Pair tiles: every rank claims the whole cluster tile, so consumers wait for all G copies.
  const bool pair = n.profile.gemm_pair_tiles;
  const int64_t r0 = pair ? m0 : m, r1 = pair ? std::min(M, m0 + g.G * g.cm) : m + m_rows;
  const bool has_bias = flags_.bias != Bias::none;
  d.reads.resize(num_inputs());
  d.writes.resize(1);
  if (r1 > r0) {
    d.reads[0].push_back(rows_box(t.b, t.d, r0, r1, 0, g.K));
    d.writes[0].push_back(rows_box(t.b, t.d, r0, r1, n0, n0 + n_cols));
    if (flags_.rms_in) d.reads[rms_w_input()].push_back(Box::of_shape(n.inputs[rms_w_input()].padded()));
  }
  if (g.K > 0) d.reads[1].push_back(rows_box(t.b, t.d, 0, g.K, n0, n0 + n_cols));
  if (flags_.swiglu && g.K > 0) d.reads[2].push_back(rows_box(t.b, t.d, 0, g.K, n0, n0 + n_cols));
  if (has_bias) {
    // Word 15: the bias origin as one element offset into its (row-major) backing tensor.
    const Operand& c = n.inputs[2];
    const Coord4 cv = c.padded(), cs = c.backing.padded();
    const bool row = flags_.bias == Bias::row;
    const int64_t cb = cv[0] > 1 ? t.b : 0, cd = cv[1] > 1 ? t.d : 0;  // broadcast batch dims read 0
    const Coord4 o = c.origin({cb, cd, row ? 0 : m, n0});
    d.indices.push_back(static_cast<int32_t>(((o[0] * cs[1] + o[1]) * cs[2] + o[2]) * cs[3] + o[3]));
    if (r1 > r0) d.reads[2].push_back(rows_box(cb, cd, row ? 0 : r0, row ? 1 : r1, n0, n0 + n_cols));
  }
  if (flags_.rope != 0 && r1 > r0)  // the rows m % T of the tables: the whole of both (they are small)
    for (int k = rope_input(); k < rope_input() + 2; ++k) d.reads[k].push_back(Box::of_shape(n.inputs[k].padded()));
  return d;
}

}  // namespace mk
