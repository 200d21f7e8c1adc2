// Phase 1 (seed §04): validate every compute node, ask its IType for the instruction count and
// descriptions, and give it a contiguous range of the list rounded up to the cluster size, so that
// the instructions of a cluster (2k, 2k+1) always belong to the same node; with Profile::balance_costs,
// instructions of unequal cost are spread over the SMs by it ([Note: cost-balanced placement]).
#include <algorithm>
#include <numeric>

#include "ir/error.h"
#include "itypes/gemm.h"
#include "schedule/phases.h"

namespace mk {

namespace {
// Whether two A views read the same rows of one tensor: equal but for the K range (the last view
// dim), as the pieces of a split-K Gemm (phase 0) and a layer's q, k and v projections do.
bool same_rows(const Edge& a, const Edge& b) {
  if (a.node != b.node || a.output != b.output) return false;
  TensorRange x = a.range, y = b.range;
  const int kd = x.view_dim[3];
  if (kd < 0 || y.view_dim[3] != kd) return x == y;
  y.box.lo[kd] = x.box.lo[kd];
  y.box.hi[kd] = x.box.hi[kd];
  y.view_shape.back() = x.view_shape.back();
  return x == y;
}

// The cost of each group of G instructions (a cluster's ranks): its costliest; empty when all groups cost
// the same (nothing to order).
std::vector<double> group_costs(const std::vector<InstrDesc>& descs, const IType& it, const NodeInfo& info,
                                int64_t G) {
  const int64_t n = static_cast<int64_t>(descs.size());
  std::vector<double> cost((n + G - 1) / G, 0);
  for (int64_t i = 0; i < n; ++i) cost[i / G] = std::max(cost[i / G], it.cost(info, descs[i]));
  if (std::all_of(cost.begin(), cost.end(), [&](double c) { return c == cost[0]; })) return {};
  return cost;
}

// A node's `groups` cluster groups (IType order) cut into chunks of `waves` waves, waves x num_sms / G
// groups (Profile::claim_chunk; 0: one chunk); the remainder joins the last chunk, which so holds between
// one and two chunks' worth. Returns the boundaries, 0 first and `groups` last.
std::vector<int64_t> chunk_bounds(int64_t groups, int64_t num_sms, int64_t G, int waves) {
  if (waves <= 0) return {0, groups};
  const int64_t chunk = std::max<int64_t>(1, waves * num_sms / G);
  std::vector<int64_t> b{0};
  while (groups - b.back() >= 2 * chunk) b.push_back(b.back() + chunk);
  b.push_back(groups);
  return b;
}

// Groups [a, b), costliest first (ties in their order).
std::vector<int64_t> longest_first(const std::vector<double>& cost, int64_t a, int64_t b) {
  std::vector<int64_t> order(b - a);
  std::iota(order.begin(), order.end(), a);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return cost[x] > cost[y]; });
  return order;
}

// [Note: cost-balanced placement] Instruction k of a node runs on SM (start + k) % S (per-SM queues, seed
// §07), so the node's own order decides each SM's share. When its IType rates the instructions
// unequally (causal Attention: a tile's cost grows with its last key), the groups of G instructions (a
// cluster's ranks stay together) are dealt longest first (LPT), each to the cluster slot with the least
// cost so far, and each slot runs its share shortest first. Instructions of one node never wait for each
// other, so any order is valid. With the per-head order (longest to shortest tile of each head, round
// robin) an 8B layer's 512 causal tiles gave one SM 40 key blocks against 33 on average.
// Profile::balance_costs = 1 balances every such node at once: an HF 1B layer (256 tiles: 12 key blocks
// on some SMs, 9 on average; device time 5.261 -> 5.128 ms balanced), causal SDPA alone ((16, 16, 2048,
// 128) per_sm 359 -> 420 TFLOP/s), an 8B layer's 512 tiles (6.63 / 6.73 -> 6.60 / 6.57 ms; longest first
// on every SM: ~20 us slower per layer). 2 balances only nodes of at most two instructions per SM.
// 3 (h200's) balances chunk by chunk (`chunk_bounds`: the IType's order, head by head, in chunks of
// Profile::claim_chunk waves, each dealt over its own positions, the slots' loads carried from chunk to
// chunk), so the SMs run tiles of a few heads at any time and their K / V share L2: with 1, (4, 32, 8192,
// 128) ran 132 heads side by side. H200, 2026-12-04, per_sm, same process, against 1: (4, 32, 8192, 128)
// +21%, (4, 32, 8192, 64) +11%, (16, 16, 2048, *) +2-3% with claim_chunk 4; chunks of 2 waves lost 8-10%
// at S 2048. Nodes of one chunk (an HF 1B or 8B layer) are placed as with 1. benchmarks/notes.md
// Sessions 20, 23, 32 and 33.
// Returns where each group went (group g of the IType's order now at position pos[g]), or nothing when
// the order was kept.
// `cost`: group_costs' (not empty).
std::vector<int64_t> balance_costs(std::vector<InstrDesc>& descs, const std::vector<double>& cost, int64_t start,
                                   int64_t num_sms, int64_t G, int chunk_waves) {
  const int64_t n = static_cast<int64_t>(descs.size());
  if (G < 1 || n % G != 0 || start % G != 0 || num_sms % G != 0) return {};
  const int64_t groups = n / G, slots = num_sms / G;
  std::vector<double> load(slots, 0);
  std::vector<InstrDesc> out(n);
  std::vector<int64_t> pos(groups);
  const std::vector<int64_t> bounds = chunk_bounds(groups, num_sms, G, chunk_waves);
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {  // chunk [a, b): its groups go to its positions
    const int64_t a = bounds[k], b = bounds[k + 1];
    const std::vector<int64_t> order = longest_first(cost, a, b);
    // Group position q (0-based within the node) runs on cluster slot (start / G + q) % slots.
    std::vector<std::vector<int64_t>> free_pos(slots);
    for (int64_t q = b - 1; q >= a; --q) free_pos[(start / G + q) % slots].push_back(q);  // earliest last
    std::vector<std::vector<int64_t>> mine(slots);  // per slot: its groups, longest first
    for (int64_t g : order) {
      int64_t best = -1;
      for (int64_t c = 0; c < slots; ++c)
        if (mine[c].size() < free_pos[c].size() && (best < 0 || load[c] < load[best])) best = c;
      mine[best].push_back(g);
      load[best] += cost[g];
    }
    // On each slot the shortest group first: a causal tile's last keys are the inputs that come last, so
    // the long tiles waiting on them went first on every SM and an 8B layer's attention took ~20 us
    // longer (benchmarks/notes.md Session 20).
    for (int64_t c = 0; c < slots; ++c)
      for (size_t j = 0; j < mine[c].size(); ++j) {
        const int64_t g = mine[c][mine[c].size() - 1 - j], q = free_pos[c][free_pos[c].size() - 1 - j];
        for (int64_t r = 0; r < G; ++r) out[q * G + r] = std::move(descs[g * G + r]);
        pos[g] = q;
      }
  }
  descs = std::move(out);
  return pos;
}

// [Note: global claim order] The global queue hands out a node's rows in table order. In the IType's order
// (causal Attention: each head's tiles longest to shortest) the last claims are a mix: one SM takes a
// whole-row tile at the end while the others run out of work. Wholly longest first (LPT) fixes the end but
// runs every head at once, whose K / V no longer share L2. So the global table takes the IType's order in
// chunks of Profile::claim_chunk waves (h200: 4, 4 x SMs / G groups; the remainder joins the last chunk)
// and each chunk longest first: a few heads' K / V in flight, and the last chunk ends on its shortest
// tiles. A cluster's ranks stay together; the per-SM tables keep their placement. H200, 2026-12-04,
// causal SDPA, global queue, same process (benchmarks/notes.md Session 33), TFLOP/s for chunks of 2 / 4 /
// 8 waves and one chunk (LPT): (16, 16, 2048, 64) 255 / 265 / 274 / 274 (the IType's order: 0.91x of 2
// waves; Session 32's tail: the SMs finished at 553 / 578 / 605 us in the IType's order, 491 / 494 / 499
// LPT); (4, 32, 8192, 128) 463 / 475 / 463 / 408 (the IType's order 0.99x of 2 waves).
// Returns the node's groups (IType order; `cost`: group_costs', not empty) in claim order.
std::vector<int64_t> claim_order(const std::vector<double>& cost, int64_t num_sms, int64_t G, int chunk_waves) {
  std::vector<int64_t> order;
  if (chunk_waves < 0) {  // the IType's order
    order.resize(cost.size());
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  const std::vector<int64_t> bounds = chunk_bounds(static_cast<int64_t>(cost.size()), num_sms, G, chunk_waves);
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const std::vector<int64_t> part = longest_first(cost, bounds[k], bounds[k + 1]);
    order.insert(order.end(), part.begin(), part.end());
  }
  return order;
}
}  // namespace

std::vector<std::vector<int64_t>> gemm_groups(const DAG& dag) {
  std::vector<int> gemms;
  for (const Node& n : dag.nodes) {
    const auto* g = n.is_compute() ? dynamic_cast<const Gemm*>(n.itype.get()) : nullptr;
    if (g && !g->flags().swiglu && !n.inputs.empty() && !n.outputs.empty()) gemms.push_back(n.id);
  }
  std::vector<std::vector<int64_t>> group(dag.nodes.size());
  for (int a : gemms) {
    const Edge& ea = dag.nodes[a].inputs[0];
    std::vector<int64_t> ns;
    for (int b : gemms) {
      if (same_rows(ea, dag.nodes[b].inputs[0])) ns.push_back(dag.nodes[b].outputs[0].shape.back());
    }
    if (ns.size() > 1) group[a] = std::move(ns);
  }
  return group;
}

NodeInfo node_info(const DAG& dag, const Node& n, const ScheduleOptions& opt, std::vector<int64_t> group_n) {
  NodeInfo info;
  info.name = n.name;
  info.target = n.target;
  info.profile = opt.profile;
  info.cluster_size = opt.cluster_size;
  info.outputs = n.outputs;
  info.gemm_group_n = std::move(group_n);
  for (const Edge& e : n.inputs) info.inputs.push_back({e.range.backing(dag.nodes[e.node].outputs[e.output]), e.range});
  return info;
}

void phase1_count_and_place(ScheduleState& st) {
  const DAG& dag = st.dag;
  st.sched_of.assign(dag.nodes.size(), -1);
  const std::vector<std::vector<int64_t>> groups = gemm_groups(dag);
  int64_t offset = 0;
  std::vector<std::pair<int64_t, std::vector<int64_t>>> claims;  // per node of unequal costs: start, groups
  for (const Node& n : dag.nodes) {
    if (!n.is_compute()) continue;
    if (n.inputs.size() > kMaxSrcTensors || n.outputs.size() > kMaxDstTensors)
      fail("node '", n.name, "' (", n.target, "): at most ", kMaxSrcTensors, " inputs and ", kMaxDstTensors,
           " outputs per node, got ", n.inputs.size(), " and ", n.outputs.size());
    NodeInfo info = node_info(dag, n, st.opt, groups[n.id]);
    n.itype->validate(info);

    NodeSchedule ns;
    ns.node = n.id;
    ns.name = n.name;
    ns.itype = n.itype;
    ns.start = offset;
    ns.count = n.itype->num_instructions(info);
    const int64_t c = st.opt.cluster_size;
    ns.padded = (ns.count + c - 1) / c * c;
    for (const Edge& e : n.inputs) ns.src_producers.push_back(e.node);
    offset += ns.padded;

    std::vector<InstrDesc> descs;
    descs.reserve(ns.count);
    for (int64_t i = 0; i < ns.count; ++i) {
      InstrDesc d = n.itype->instruction(info, i);
      if (d.indices.size() > kMaxIndices)
        fail("node '", n.name, "' (", n.itype->str(), "): ", d.indices.size(), " indices, at most ", kMaxIndices);
      if (d.reads.size() != n.inputs.size() || d.writes.size() != n.outputs.size())
        fail("internal: ", n.itype->name(), " described ", d.reads.size(), "/", d.writes.size(),
             " operands for a node with ", n.inputs.size(), "/", n.outputs.size());
      descs.push_back(std::move(d));
    }
    const Profile& pf = st.opt.profile;
    // Instructions of unequal cost: the claim order is taken on the IType's order (heads whole), then
    // follows the groups' moves by the per-SM placement.
    if (const std::vector<double> cost = group_costs(descs, *n.itype, info, c); !cost.empty()) {
      std::vector<int64_t> order = claim_order(cost, pf.num_sms, c, pf.claim_chunk);
      if (pf.balance_costs == 1 || pf.balance_costs == 3 ||
          (pf.balance_costs == 2 && ns.count <= int64_t{Profile::kBalanceMaxPerSm} * pf.num_sms))
        if (const std::vector<int64_t> pos = balance_costs(descs, cost, ns.start, pf.num_sms, c,
                                                           pf.balance_costs == 3 ? pf.claim_chunk : 0);
            !pos.empty())
          for (int64_t& g : order) g = pos[g];
      claims.emplace_back(ns.start, std::move(order));
    }
    st.sched_of[n.id] = static_cast<int>(st.prog.nodes.size());
    st.prog.nodes.push_back(std::move(ns));
    st.infos.push_back(std::move(info));
    st.descs.push_back(std::move(descs));
  }
  if (offset > INT32_MAX) fail("graph '", dag.name, "' needs ", offset, " instructions, more than int32 indices allow");
  if (!claims.empty()) {  // [Note: global claim order]
    const int64_t G = st.opt.cluster_size;
    st.prog.global_order.resize(offset);
    std::iota(st.prog.global_order.begin(), st.prog.global_order.end(), 0);
    for (const auto& [start, order] : claims)
      for (size_t q = 0; q < order.size(); ++q)
        for (int64_t r = 0; r < G; ++r)
          st.prog.global_order[start + static_cast<int64_t>(q) * G + r] = static_cast<int32_t>(start + order[q] * G + r);
  }
}

}  // namespace mk
