// Phase 3 (seed §04): fine-grained barriers derived from access regions.
// [Note: barrier counting] For each producer -> consumer edge, the backing tensor is cut into
// elementary cells by every box boundary of the producer's writes (the seed's per-dimension GCD unit
// cell, generalised to ragged tiles: with tile-aligned boxes both give the same dependency sets). Every
// point of a cell has the same writers, so each consumer instruction depends on the producer
// instructions that write a cell its reads touch. Every
// distinct (producer node, dependency set) is one barrier whose target is the set's size; each
// producer in the set arrives once after its stores, each consumer waits before its loads.
// Reuse events (phase 2) get one barrier each: all old instructions arrive, the reuser waits
// before its first store. Sets that would make an instruction arrive on more than 8 barriers are
// merged first ([Note: barrier coarsening]).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

#include "ir/error.h"
#include "schedule/phases.h"

namespace mk {

namespace {

// Cells of a 4-D grid given by sorted boundaries per dim.
struct CellGrid {
  std::array<std::vector<int64_t>, 4> cuts;
  int64_t size(int d) const { return static_cast<int64_t>(cuts[d].size()) - 1; }
  // Index range [lo, hi) of the cells along dim d that [a, b) touches (a and b need not be cuts).
  std::pair<int64_t, int64_t> span(int d, int64_t a, int64_t b) const {
    if (a >= b) return {0, 0};
    const auto& c = cuts[d];
    const int64_t lo = std::max<int64_t>(0, std::upper_bound(c.begin(), c.end(), a) - c.begin() - 1);
    const int64_t hi = std::min<int64_t>(size(d), std::lower_bound(c.begin(), c.end(), b) - c.begin());
    return {lo, std::max(lo, hi)};
  }
  template <class F>
  void for_cells(const Box& box, F&& f) const {
    std::array<std::pair<int64_t, int64_t>, 4> s;
    for (int d = 0; d < 4; ++d) s[d] = span(d, box.lo[d], box.hi[d]);
    for (int64_t i0 = s[0].first; i0 < s[0].second; ++i0)
      for (int64_t i1 = s[1].first; i1 < s[1].second; ++i1)
        for (int64_t i2 = s[2].first; i2 < s[2].second; ++i2)
          for (int64_t i3 = s[3].first; i3 < s[3].second; ++i3)
            f(((i0 * size(1) + i1) * size(2) + i2) * size(3) + i3);
  }
};

// [Note: reshape aliases] A consumer that reads through a reshape sees the producer's tensor with
// another shape, so both sides' boxes become runs of the flat element index (as 1-D boxes on the last
// dim) before cells are cut, unless both fit a common shape (common_refinement below). Consecutive
// rows that touch merge into one run.
std::vector<Box> linearize(const Box& b, const Coord4& shape, int64_t offset) {
  const Coord4 stride{shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
  std::vector<Box> out;
  for (int64_t i0 = b.lo[0]; i0 < b.hi[0]; ++i0)
    for (int64_t i1 = b.lo[1]; i1 < b.hi[1]; ++i1)
      for (int64_t i2 = b.lo[2]; i2 < b.hi[2]; ++i2) {
        const int64_t start = offset + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + b.lo[3];
        const int64_t end = start + b.extent(3);
        if (!out.empty() && out.back().hi[3] == start) out.back().hi[3] = end;
        else out.push_back({{0, 0, 0, start}, {1, 1, 1, end}});
      }
  return out;
}

// [Note: reshape aliases] Most reshapes only split or merge dims ((1024, 512) read as (1024, 8, 64)): both
// shapes then split one common row-major shape of at most 4 dims, in which every tile is still a box.
// Moving both sides' boxes there keeps the same element sets, so the same dependency sets, without one
// run per row. The common shape's dims are the ratios of the union of both shapes' suffix products,
// which must form a divisibility chain; none when it does not or needs more than 4 dims.
std::optional<Coord4> common_refinement(const Coord4& a, const Coord4& b) {
  std::vector<int64_t> s = {1};
  for (const Coord4* shape : {&a, &b}) {
    int64_t p = 1;
    for (int d = 3; d >= 0; --d) s.push_back(p *= (*shape)[d]);
  }
  if (s[4] != s[8] || s[4] <= 0) return std::nullopt;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  if (s.size() > 5) return std::nullopt;
  Coord4 fine{1, 1, 1, 1};
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i] % s[i - 1] != 0) return std::nullopt;
    fine[4 - i] = s[i] / s[i - 1];
  }
  return fine;
}

// The range [a, b) of one dim as a box of the fine dims [first, end) it splits into (outer to inner),
// written into `out`; false when it is none: past the inner dims it covers whole, it must stay within
// one index of the outer ones.
bool refine_range(int64_t a, int64_t b, const Coord4& fine, int first, int end, Box& out) {
  int t = end;  // fine dims [t, end) are covered whole
  int64_t whole = 1;
  while (t > first && a % (whole * fine[t - 1]) == 0 && b % (whole * fine[t - 1]) == 0) whole *= fine[--t];
  if (t == first) return true;  // the whole group
  const int64_t lo = a / whole, hi = b / whole, n = fine[t - 1];
  if (lo / n != (hi - 1) / n) return false;
  out.lo[t - 1] = lo % n;
  out.hi[t - 1] = (hi - 1) % n + 1;
  int64_t q = lo / n;
  for (int k = t - 2; k >= first; --k) {
    out.lo[k] = q % fine[k];
    out.hi[k] = out.lo[k] + 1;
    q /= fine[k];
  }
  return true;
}

// The box `b` of `shape` in `fine` (the common refinement of `shape` and another shape), or false when
// its elements are no box there.
bool refine_box(const Box& b, const Coord4& shape, const Coord4& fine, Box& out) {
  for (int d = 0; d < 4; ++d) {
    if (b.lo[d] < 0 || b.hi[d] > shape[d]) return false;
    if (b.hi[d] <= b.lo[d]) {
      out = Box{};  // no elements
      return true;
    }
  }
  out = Box::of_shape(fine);
  int end = 4;  // fine dims [end, 4) belong to the inner dims of `shape`
  for (int d = 3; d >= 0; --d) {
    int first = end;
    int64_t n = 1;
    while (n < shape[d] && first > 0) n *= fine[--first];
    if (n != shape[d]) return false;
    if (first < end && !refine_range(b.lo[d], b.hi[d], fine, first, end, out)) return false;
    end = first;
  }
  return true;
}

// Both sides' boxes in the common refinement of their shapes, in place; false (nothing changed) when
// there is none or some box is no box there.
bool to_common_shape(std::vector<std::vector<Box>>& writes, const Coord4& wshape,
                     std::vector<std::vector<Box>>& reads, const Coord4& rshape) {
  const std::optional<Coord4> fine = common_refinement(wshape, rshape);
  if (!fine) return false;
  auto refine_all = [&](const std::vector<std::vector<Box>>& lists, const Coord4& shape,
                        std::vector<std::vector<Box>>& out) {
    out.resize(lists.size());
    for (size_t i = 0; i < lists.size(); ++i) {
      out[i].resize(lists[i].size());
      for (size_t k = 0; k < lists[i].size(); ++k)
        if (!refine_box(lists[i][k], shape, *fine, out[i][k])) return false;
    }
    return true;
  };
  std::vector<std::vector<Box>> w, r;
  if (!refine_all(writes, wshape, w) || !refine_all(reads, rshape, r)) return false;
  writes = std::move(w);
  reads = std::move(r);
  return true;
}

CellGrid make_grid(const std::vector<const std::vector<Box>*>& box_lists) {
  CellGrid g;
  for (int d = 0; d < 4; ++d) {
    auto& c = g.cuts[d];
    for (const auto* boxes : box_lists)
      for (const Box& b : *boxes) {
        c.push_back(b.lo[d]);
        c.push_back(b.hi[d]);
      }
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    if (c.size() < 2) c = {0, 1};
  }
  return g;
}


// The dependency sets of one producer -> consumer edge: each consumer instruction waits for the
// producer instructions (global indices, sorted) that write a cell it reads.
struct EdgeDeps {
  int producer = -1;                        // index into Program::nodes
  bool late = false;                        // the consumer reads this input late (IType::late_input)
  int64_t consumer_start = 0, consumer_count = 0;
  std::vector<std::vector<int32_t>> sets;   // distinct sets, in first-use order (empty: merged away)
  std::vector<int> set_of;                  // per consumer instruction: index into sets, -1 for none
};

EdgeDeps edge_deps(const ScheduleState& st, int c, size_t k, int p) {
  const Program& prog = st.prog;
  const NodeSchedule& cons = prog.nodes[c];
  const NodeSchedule& prod = prog.nodes[p];
  const Edge& e = st.dag.nodes[cons.node].inputs[k];
  // Boxes on the backing tensor: producer writes are in output coords, consumer reads in view coords.
  std::vector<std::vector<Box>> writes(prod.count), reads(cons.count);
  const TensorMeta& out_meta = st.dag.nodes[e.node].outputs[e.output];
  auto flat = [](std::vector<Box>& boxes, const Coord4& shape, int64_t offset) {
    std::vector<Box> runs;
    for (const Box& b : boxes)
      for (const Box& r : linearize(b, shape, offset)) runs.push_back(r);
    boxes = std::move(runs);
  };
  for (int64_t i = 0; i < prod.count; ++i) writes[i] = st.descs[p][i].writes[e.output];
  for (int64_t i = 0; i < cons.count; ++i)
    for (const Box& b : st.descs[c][i].reads[k]) reads[i].push_back(e.range.to_backing(b));
  if (e.range.alias) {
    const Coord4 wshape = out_meta.padded(), rshape = e.range.backing(out_meta).padded();
    if (st.opt.flat_aliases || e.range.alias->offset != 0 || !to_common_shape(writes, wshape, reads, rshape)) {
      for (auto& w : writes) flat(w, wshape, 0);
      for (auto& r : reads) flat(r, rshape, e.range.alias->offset);
    }
  }
  // Cells cut by the producer's boxes alone: every point of a cell has the same writers, so a read box that
  // touches a cell depends on them (reads need not cut: a convolution's shifted taps would multiply the cells).
  std::vector<const std::vector<Box>*> lists;
  for (const auto& w : writes) lists.push_back(&w);
  const CellGrid grid = make_grid(lists);
  std::vector<std::vector<int32_t>> writers(grid.size(0) * grid.size(1) * grid.size(2) * grid.size(3));
  for (int64_t i = 0; i < prod.count; ++i)
    for (const Box& b : writes[i])
      grid.for_cells(b, [&](int64_t cell) { writers[cell].push_back(static_cast<int32_t>(prod.start + i)); });

  EdgeDeps ed;
  ed.producer = p;
  ed.consumer_start = cons.start;
  ed.consumer_count = cons.count;
  ed.set_of.assign(cons.count, -1);
  std::map<std::vector<Box>, int> cache;            // identical box lists share a dependency set
  std::map<std::vector<int32_t>, int> set_index;
  for (int64_t i = 0; i < cons.count; ++i) {
    auto [it, fresh] = cache.try_emplace(reads[i], -1);
    if (fresh) {
      std::vector<int32_t> deps;
      for (const Box& b : reads[i])
        grid.for_cells(b, [&](int64_t cell) { deps.insert(deps.end(), writers[cell].begin(), writers[cell].end()); });
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      if (!deps.empty()) {
        auto [sit, added] = set_index.try_emplace(deps, static_cast<int>(ed.sets.size()));
        if (added) ed.sets.push_back(std::move(deps));
        it->second = sit->second;
      }
    }
    ed.set_of[i] = it->second;
  }
  return ed;
}

// Whether instruction i of scheduled node a writes or reads the old tensor of reuse event ev: only those
// arrive on its barrier (an instruction that touches none of it cannot race with the new contents).
bool touches_old(const ScheduleState& st, const ReuseEvent& ev, int a, int64_t i) {
  if (ev.old_node < 0) return true;
  const Node& n = st.dag.nodes[st.prog.nodes[a].node];
  const InstrDesc& d = st.descs[a][i];
  if (n.id == ev.old_node && !d.writes[ev.old_output].empty()) return true;
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (n.inputs[k].node == ev.old_node && n.inputs[k].output == ev.old_output && !d.reads[k].empty()) return true;
  return false;
}

// [Note: barrier coarsening] One barrier per distinct (producer, set) makes a producer instruction
// arrive on as many barriers as there are distinct sets holding it: causal attention reads key rows
// [0, kv_end) for every query tile, so the first key tile is in one set per query tile (16 at 2048
// rows) while an instruction has room for 8. While some instruction is over the limit, the two sets
// holding it (of the edge with the most such sets) whose union adds the fewest producers merge into
// their union: their consumers wait for a few more producer instructions, all earlier in the list,
// so nothing can deadlock; only overlap is lost. Within the limit nothing changes.
class Coarsener {
 public:
  Coarsener(std::vector<EdgeDeps>& edges, const std::vector<int>& reuse_arrivals, const Program& prog)
      : edges_(edges), count_(reuse_arrivals), node_of_(reuse_arrivals.size(), -1), by_producer_(prog.nodes.size()) {
    for (size_t n = 0; n < prog.nodes.size(); ++n)
      for (int64_t i = 0; i < prog.nodes[n].count; ++i) node_of_[prog.nodes[n].start + i] = static_cast<int>(n);
    for (size_t e = 0; e < edges_.size(); ++e) {
      by_producer_[edges_[e].producer].push_back(static_cast<int>(e));
      for (const auto& set : edges_[e].sets) ref(edges_[e].producer, set, +1);
    }
  }

  void run() {
    // A merge never raises a count unless a set key is shared with another edge: repeat until stable.
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < count_.size(); ++i)
        while (count_[i] > kMaxDstBarriers && merge_at(static_cast<int32_t>(i))) changed = true;
    }
  }

 private:
  // Distinct (producer, set) keys per producer instruction: what phase 4 packs as dst barriers.
  void ref(int producer, const std::vector<int32_t>& set, int delta) {
    if (set.empty()) return;
    int& r = refs_[{producer, set}];
    const bool was = r > 0;
    r += delta;
    if (was != (r > 0))
      for (int32_t d : set) count_[d] += r > 0 ? 1 : -1;
  }

  // Merges two sets holding instruction i; false when no edge has two.
  bool merge_at(int32_t i) {
    EdgeDeps* ed = nullptr;
    std::vector<int> holding;
    for (int e : by_producer_[node_of_[i]]) {
      std::vector<int> h;
      const auto& sets = edges_[e].sets;
      for (size_t s = 0; s < sets.size(); ++s)
        if (std::binary_search(sets[s].begin(), sets[s].end(), i)) h.push_back(static_cast<int>(s));
      if (h.size() > holding.size()) holding = std::move(h), ed = &edges_[e];
    }
    if (holding.size() < 2) return false;  // phase 4 reports the instruction
    auto& sets = ed->sets;
    std::vector<int32_t> best;
    int a = -1, b = -1;
    size_t best_cost = SIZE_MAX;
    for (size_t x = 0; x < holding.size(); ++x)
      for (size_t y = x + 1; y < holding.size(); ++y) {
        const auto &A = sets[holding[x]], &B = sets[holding[y]];
        std::vector<int32_t> u;
        std::set_union(A.begin(), A.end(), B.begin(), B.end(), std::back_inserter(u));
        const size_t cost = 2 * u.size() - A.size() - B.size();  // producers the two consumers gain
        if (cost < best_cost) best_cost = cost, a = holding[x], b = holding[y], best = std::move(u);
      }
    // b, and any other set equal to the union, fold into a.
    for (size_t s = 0; s < sets.size(); ++s) {
      if (static_cast<int>(s) == a || (static_cast<int>(s) != b && sets[s] != best)) continue;
      ref(ed->producer, sets[s], -1);
      sets[s].clear();
      for (int& t : ed->set_of)
        if (t == static_cast<int>(s)) t = a;
    }
    ref(ed->producer, sets[a], -1);
    sets[a] = std::move(best);
    ref(ed->producer, sets[a], +1);
    return true;
  }

  std::vector<EdgeDeps>& edges_;
  std::vector<int> count_;                   // per instruction: dst barriers it would arrive on
  std::vector<int> node_of_;                 // per instruction: index into Program::nodes
  std::vector<std::vector<int>> by_producer_;  // per node: its outgoing edges
  std::map<std::pair<int, std::vector<int32_t>>, int> refs_;
};

}  // namespace

void phase3_barriers(ScheduleState& st) {
  Program& prog = st.prog;
  const DAG& dag = st.dag;
  const int64_t total = prog.nodes.empty() ? 0 : prog.nodes.back().end();
  st.barriers.assign(total, {});

  auto add_src = [](std::vector<std::pair<int, int>>& v, int b, int target) {
    for (const auto& [id, t] : v)
      if (id == b) return;
    v.emplace_back(b, target);
  };
  auto add_dst = [](std::vector<int>& v, int b) {
    if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
  };

  std::vector<EdgeDeps> edges;
  for (size_t c = 0; c < prog.nodes.size(); ++c) {
    const Node& cn = dag.nodes[prog.nodes[c].node];
    for (size_t k = 0; k < cn.inputs.size(); ++k) {
      const int p = st.sched_of[cn.inputs[k].node];
      if (p < 0) continue;  // a graph input
      edges.push_back(edge_deps(st, static_cast<int>(c), k, p));
      edges.back().late = cn.itype->late_input(static_cast<int>(k));
    }
  }
  std::vector<int> reuse_arrivals(total, 0);
  for (const ReuseEvent& ev : st.reuse_events)
    for (int a : ev.arrivers)
      for (int64_t i = 0; i < prog.nodes[a].count; ++i)
        if (touches_old(st, ev, a, i)) ++reuse_arrivals[prog.nodes[a].start + i];
  Coarsener(edges, reuse_arrivals, prog).run();

  // One barrier per distinct (producer, set), numbered in order of first use. Each set of an edge is
  // looked up once (barrier_of_set): later consumers of the same set reuse its barrier.
  std::map<std::pair<int, std::vector<int32_t>>, int> barrier_of;
  for (const EdgeDeps& ed : edges) {
    std::vector<int> barrier_of_set(ed.sets.size(), -1);
    for (int64_t i = 0; i < ed.consumer_count; ++i) {
      const int s = ed.set_of[i];
      if (s < 0) continue;
      int& b = barrier_of_set[s];
      if (b < 0) {
        const std::vector<int32_t>& deps = ed.sets[s];
        auto [bit, added] = barrier_of.try_emplace({ed.producer, deps}, static_cast<int>(prog.barriers.size()));
        if (added) {
          prog.barriers.push_back({static_cast<int32_t>(deps.size()), ed.producer, false});
          for (int32_t d : deps) add_dst(st.barriers[d].dst_input, bit->second);
        }
        b = bit->second;
      }
      // A barrier an early input needs too stays early: the loads wait for it anyway.
      auto& ib = st.barriers[ed.consumer_start + i];
      const auto is_b = [b](const auto& pr) { return pr.first == b; };
      if (ed.late) {
        if (std::none_of(ib.src_input.begin(), ib.src_input.end(), is_b)) add_src(ib.src_late, b, prog.barriers[b].target);
      } else {
        std::erase_if(ib.src_late, is_b);
        add_src(ib.src_input, b, prog.barriers[b].target);
      }
    }
  }

  for (const ReuseEvent& ev : st.reuse_events) {
    const int b = static_cast<int>(prog.barriers.size());
    int32_t target = 0;
    for (int a : ev.arrivers) {
      const NodeSchedule& an = prog.nodes[a];
      for (int64_t i = 0; i < an.count; ++i)  // Noop padding does not arrive
        if (touches_old(st, ev, a, i)) {
          add_dst(st.barriers[an.start + i].dst_reuse, b);
          ++target;
        }
    }
    if (target == 0) continue;  // nothing of the old tensor was touched: no hazard
    prog.barriers.push_back({target, -1, true});
    const NodeSchedule& w = prog.nodes[ev.waiter];
    for (int64_t i = 0; i < w.count; ++i) add_src(st.barriers[w.start + i].src_reuse, b, target);
  }

  if (st.opt.drop_barrier >= 0)
    for (auto& ib : st.barriers)
      for (auto* v : {&ib.src_input, &ib.src_late, &ib.src_reuse})
        std::erase_if(*v, [&](const auto& pr) { return pr.first == st.opt.drop_barrier; });
}

}  // namespace mk
