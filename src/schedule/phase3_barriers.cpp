// Phase 3 (seed §04): fine-grained barriers derived from access regions.
// [Note: barrier counting] For each producer -> consumer edge, the backing tensor is cut into
// elementary cells by every box boundary on both sides (the seed's per-dimension GCD unit cell,
// generalised to ragged tiles: with tile-aligned boxes both give the same dependency sets). Each
// consumer instruction depends on the producer instructions that write a cell it reads. Every
// distinct (producer node, dependency set) is one barrier whose target is the set's size; each
// producer in the set arrives once after its stores, each consumer waits before its loads.
// Reuse events (phase 2) get one barrier each: all old instructions arrive, the reuser waits
// before its first store.
#include <algorithm>
#include <map>

#include "ir/error.h"
#include "schedule/phases.h"

namespace mk {

namespace {

// Cells of a 4-D grid given by sorted boundaries per dim.
struct CellGrid {
  std::array<std::vector<int64_t>, 4> cuts;
  int64_t size(int d) const { return static_cast<int64_t>(cuts[d].size()) - 1; }
  // Index range [lo, hi) of cells along dim d covered by [a, b).
  std::pair<int64_t, int64_t> span(int d, int64_t a, int64_t b) const {
    const auto& c = cuts[d];
    return {std::lower_bound(c.begin(), c.end(), a) - c.begin(), std::lower_bound(c.begin(), c.end(), b) - c.begin()};
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
// dim) before cells are cut. Consecutive rows that touch merge into one run.
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

}  // namespace

void phase3_barriers(ScheduleState& st) {
  Program& prog = st.prog;
  const DAG& dag = st.dag;
  const int64_t total = prog.nodes.empty() ? 0 : prog.nodes.back().end();
  st.barriers.assign(total, {});
  std::map<std::pair<int, std::vector<int32_t>>, int> barrier_of;  // (producer, set) -> barrier

  auto add_src = [](std::vector<std::pair<int, int>>& v, int b, int target) {
    for (const auto& [id, t] : v)
      if (id == b) return;
    v.emplace_back(b, target);
  };
  auto add_dst = [](std::vector<int>& v, int b) {
    if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
  };

  for (size_t c = 0; c < prog.nodes.size(); ++c) {
    const NodeSchedule& cons = prog.nodes[c];
    const Node& cn = dag.nodes[cons.node];
    for (size_t k = 0; k < cn.inputs.size(); ++k) {
      const Edge& e = cn.inputs[k];
      const int p = st.sched_of[e.node];
      if (p < 0) continue;  // graph input: nothing to wait for
      const NodeSchedule& prod = prog.nodes[p];
      // Boxes on the backing tensor: producer writes are in output coords, consumer reads in view coords.
      std::vector<std::vector<Box>> writes(prod.count), reads(cons.count);
      const TensorMeta& out_meta = dag.nodes[e.node].outputs[e.output];
      auto flat = [](std::vector<Box>& boxes, const Coord4& shape, int64_t offset) {
        std::vector<Box> runs;
        for (const Box& b : boxes)
          for (const Box& r : linearize(b, shape, offset)) runs.push_back(r);
        boxes = std::move(runs);
      };
      for (int64_t i = 0; i < prod.count; ++i) {
        writes[i] = st.descs[p][i].writes[e.output];
        if (e.range.alias) flat(writes[i], out_meta.padded(), 0);
      }
      for (int64_t i = 0; i < cons.count; ++i) {
        for (const Box& b : st.descs[c][i].reads[k]) reads[i].push_back(e.range.to_backing(b));
        if (e.range.alias) flat(reads[i], e.range.backing(out_meta).padded(), e.range.alias->offset);
      }
      std::vector<const std::vector<Box>*> lists;
      for (const auto& w : writes) lists.push_back(&w);
      for (const auto& r : reads) lists.push_back(&r);
      const CellGrid grid = make_grid(lists);
      std::vector<std::vector<int32_t>> writers(grid.size(0) * grid.size(1) * grid.size(2) * grid.size(3));
      for (int64_t i = 0; i < prod.count; ++i)
        for (const Box& b : writes[i])
          grid.for_cells(b, [&](int64_t cell) { writers[cell].push_back(static_cast<int32_t>(prod.start + i)); });

      std::map<std::vector<Box>, int> cache;  // identical box lists share a dependency set
      for (int64_t i = 0; i < cons.count; ++i) {
        auto [it, fresh] = cache.try_emplace(reads[i], -1);
        if (fresh) {
          std::vector<int32_t> deps;
          for (const Box& b : reads[i])
            grid.for_cells(b, [&](int64_t cell) { deps.insert(deps.end(), writers[cell].begin(), writers[cell].end()); });
          std::sort(deps.begin(), deps.end());
          deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
          if (!deps.empty()) {
            auto [bit, added] = barrier_of.try_emplace({p, deps}, static_cast<int>(prog.barriers.size()));
            if (added) {
              prog.barriers.push_back({static_cast<int32_t>(deps.size()), p, false});
              for (int32_t d : deps) add_dst(st.barriers[d].dst_input, bit->second);
            }
            it->second = bit->second;
          }
        }
        if (it->second >= 0)
          add_src(st.barriers[cons.start + i].src_input, it->second, prog.barriers[it->second].target);
      }
    }
  }

  for (const ReuseEvent& ev : st.reuse_events) {
    const int b = static_cast<int>(prog.barriers.size());
    int32_t target = 0;
    for (int a : ev.arrivers) {
      const NodeSchedule& an = prog.nodes[a];
      for (int64_t i = 0; i < an.count; ++i) add_dst(st.barriers[an.start + i].dst_reuse, b);
      target += static_cast<int32_t>(an.count);  // Noop padding does not arrive
    }
    prog.barriers.push_back({target, -1, true});
    const NodeSchedule& w = prog.nodes[ev.waiter];
    for (int64_t i = 0; i < w.count; ++i) add_src(st.barriers[w.start + i].src_reuse, b, target);
  }

  if (st.opt.drop_barrier >= 0)
    for (auto& ib : st.barriers)
      for (auto* v : {&ib.src_input, &ib.src_reuse})
        std::erase_if(*v, [&](const auto& pr) { return pr.first == st.opt.drop_barrier; });
}

}  // namespace mk
