// Phase 2 (seed §04): give every node output a tensor slot, reusing freed buffers.
// A freed buffer goes into a pool keyed by its exact TensorMeta; a new output takes a pooled buffer
// only when its node starts at least #SMs instructions after the end of every instruction that
// touched the old contents (a full wave behind), and then waits on a reuse barrier (phase 3).
// Never pooled: graph inputs, buffers that feed the graph output, buffers mutated in place.
#include <algorithm>
#include <list>

#include "ir/error.h"
#include "schedule/phases.h"

namespace mk {

namespace {

struct PoolEntry {
  int slot;
  TensorMeta meta;
  int64_t free_after;          // end of the last instruction that touched the old contents
  std::vector<int> arrivers;   // scheduled nodes: the old producer and all its readers
  int producer = -1, output = -1;  // DAG ids of the old tensor
};

// Past kMaxSlots the assignment goes on, so that the error at the end can say how many slots the graph needs.
int new_slot(ScheduleState& st, const TensorMeta& meta, int producer) {
  st.prog.slots.push_back(meta);
  st.prog.slot_producer.push_back(producer);
  st.prog.slot_base.push_back(-1);
  st.prog.slot_offset.push_back(0);
  return static_cast<int>(st.prog.slots.size()) - 1;
}

// [Note: reshape aliases] The slot that sees `base` through a reshape: one per (base, offset, shape).
int alias_slot(ScheduleState& st, int base, const TensorRange::Alias& a) {
  Program& prog = st.prog;
  for (size_t s = 0; s < prog.slots.size(); ++s)
    if (prog.slot_base[s] == base && prog.slot_offset[s] == a.offset && prog.slots[s].shape == a.shape)
      return static_cast<int>(s);
  TensorMeta meta = prog.slots[base];
  meta.shape = a.shape;
  const int s = new_slot(st, meta, prog.slot_producer[base]);
  prog.slot_base[s] = base;
  prog.slot_offset[s] = a.offset;
  return s;
}

}  // namespace

void phase2_assign_slots(ScheduleState& st) {
  const DAG& dag = st.dag;
  Program& prog = st.prog;
  st.out_slot.assign(dag.nodes.size(), {});
  std::vector<char> never_pool;  // per slot
  auto mark = [&](int slot) {
    if (static_cast<int>(never_pool.size()) <= slot) never_pool.resize(slot + 1, 0);
    never_pool[slot] = 1;
  };
  const int out_node = dag.output_node();
  auto feeds_output = [&](const Node& n, int o) {
    for (const Use& u : n.users[o])
      if (u.node == out_node) return true;
    return false;
  };
  auto end_of = [&](int dag_id) { return prog.nodes[st.sched_of[dag_id]].end(); };

  // Graph inputs first, in DAG (placeholder) order: the seed's T0 = W, T1 = x, T2 = b.
  for (const Node& n : dag.nodes) {
    if (!n.is_input()) continue;
    const int s = new_slot(st, n.outputs[0], n.id);
    st.out_slot[n.id] = {s};
    mark(s);
    if (n.input_index >= 0) {
      if (static_cast<int>(prog.input_slots.size()) <= n.input_index) prog.input_slots.resize(n.input_index + 1, -1);
      prog.input_slots[n.input_index] = s;
    } else {
      prog.attr_slots.emplace_back(n.attr, s);
    }
  }

  std::list<PoolEntry> pool;
  for (const Node& n : dag.nodes) {
    if (!n.is_compute()) continue;
    const int me = st.sched_of[n.id];
    NodeSchedule& ns = prog.nodes[me];
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const TensorMeta& meta = n.outputs[o];
      int slot = -1;
      if (auto k = n.itype->inplace_input(static_cast<int>(o))) {
        // Alias the mutated input when that cannot be observed: not a caller's tensor, not returned,
        // the whole tensor, and no reader of the old value later in the list.
        const Edge& e = n.inputs.at(*k);
        const Node& p = dag.nodes[e.node];
        const int s = st.out_slot[e.node][e.output];
        bool later_reader = false;
        std::vector<int> readers;
        for (const Use& u : p.users[e.output]) {
          if (u.node == n.id) continue;
          if (u.node > n.id) later_reader = true;
          else readers.push_back(st.sched_of[u.node]);
        }
        const bool ok = p.is_compute() && !feeds_output(p, e.output) && !later_reader && !e.range.alias &&
                        e.range.is_full(p.outputs[e.output].padded()) && prog.slots[s] == meta;
        if (ok) {
          slot = s;
          mark(s);
          if (!readers.empty()) st.reuse_events.push_back({me, readers, s, e.node, e.output});
        }
      }
      if (slot < 0) {
        auto it = std::find_if(pool.begin(), pool.end(), [&](const PoolEntry& pe) {
          return pe.meta == meta && ns.start - pe.free_after >= prog.profile.num_sms;
        });
        if (it != pool.end()) {
          slot = it->slot;
          st.reuse_events.push_back({me, it->arrivers, slot, it->producer, it->output});
          pool.erase(it);
        } else {
          slot = new_slot(st, meta, n.id);
        }
      }
      if (feeds_output(n, static_cast<int>(o))) mark(slot);
      st.out_slot[n.id].push_back(slot);
      ns.dst_slots.push_back(slot);
    }
    for (const Edge& e : n.inputs) {
      const int base = st.out_slot[e.node][e.output];
      ns.src_slots.push_back(e.range.alias ? alias_slot(st, base, *e.range.alias) : base);
    }

    // Release every tensor whose last reader is this node (or that nobody reads).
    auto release = [&](int producer, int o) {
      const Node& p = dag.nodes[producer];
      const int s = st.out_slot[producer][o];
      if (!p.is_compute() || (s < static_cast<int>(never_pool.size()) && never_pool[s])) return;
      PoolEntry pe{s, p.outputs[o], end_of(producer), {st.sched_of[producer]}, producer, o};
      for (const Use& u : p.users[o]) {
        if (u.node > n.id) return;  // still read later
        pe.free_after = std::max(pe.free_after, end_of(u.node));
        pe.arrivers.push_back(st.sched_of[u.node]);
      }
      std::sort(pe.arrivers.begin(), pe.arrivers.end());
      pe.arrivers.erase(std::unique(pe.arrivers.begin(), pe.arrivers.end()), pe.arrivers.end());
      pool.push_back(std::move(pe));
    };
    std::vector<std::pair<int, int>> done;
    for (const Edge& e : n.inputs) {
      const std::pair<int, int> key{e.node, e.output};
      if (std::find(done.begin(), done.end(), key) != done.end()) continue;
      done.push_back(key);
      release(e.node, e.output);
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.users[o].empty()) release(n.id, static_cast<int>(o));
  }

  for (const Edge& e : dag.nodes[out_node].inputs) {
    prog.output_slots.push_back(st.out_slot[e.node][e.output]);
    prog.output_ranges.push_back(e.range);
  }
  const int limit = st.opt.profile.max_slots > 0 ? std::min(st.opt.profile.max_slots, kMaxSlots) : kMaxSlots;
  if (prog.slots.size() > static_cast<size_t>(limit))
    fail("graph '", dag.name, "' needs ", prog.slots.size(), " tensor slots, at most ", limit,
         " fit an instruction's 10-bit slot ids (the first past the limit: node '",
         dag.nodes[prog.slot_producer[limit]].name,
         "'); compile the model in smaller pieces (groups of layers), or with fallback=\"eager\", which splits it");
}

}  // namespace mk
