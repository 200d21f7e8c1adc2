#include "ir/dag.h"

#include "ir/error.h"

namespace mk {

int DAG::output_node() const {
  for (size_t k = nodes.size(); k-- > 0;)
    if (nodes[k].is_output()) return static_cast<int>(k);
  fail("graph '", name, "' has no output node");
}

int DAG::add_use_links() {
  int edges = 0;
  for (auto& n : nodes) n.users.assign(n.outputs.size(), {});
  for (auto& n : nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Edge& e = n.inputs[i];
      nodes[e.node].users[e.output].push_back({n.id, static_cast<int>(i)});
      ++edges;
    }
  return edges;
}

void DAG::fold_nodes(const std::vector<int>& into) {
  std::vector<int> new_id(nodes.size(), -1);
  std::vector<Node> kept;
  for (Node& n : nodes) {
    if (into[n.id] != n.id) continue;
    for (Edge& e : n.inputs) e.node = new_id[into[e.node]];
    new_id[n.id] = static_cast<int>(kept.size());
    n.id = new_id[n.id];
    kept.push_back(std::move(n));
  }
  nodes = std::move(kept);
  add_use_links();
  validate();
}

void DAG::validate() const {
  int outputs = 0;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    if (n.id != static_cast<int>(k)) fail("DAG: node '", n.name, "' has id ", n.id, " at position ", k);
    const bool has_itype = n.itype != nullptr;
    if (has_itype != n.is_compute())
      fail("DAG: node '", n.name, "' must be exactly one of input/output/compute (itype set: ", has_itype, ")");
    if (n.is_input() && !n.inputs.empty()) fail("DAG: input node '", n.name, "' has inputs");
    if (n.is_output()) {
      ++outputs;
      if (!n.outputs.empty()) fail("DAG: output node '", n.name, "' has outputs");
      if (n.inputs.empty()) fail("graph '", name, "' returns no tensor: megakittens needs at least one tensor output");
    }
    if (!n.is_output() && n.outputs.empty()) fail("DAG: node '", n.name, "' produces no tensor");
    if (n.users.size() != n.outputs.size()) fail("DAG: node '", n.name, "' has stale use links");
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Edge& e = n.inputs[i];
      if (e.node < 0 || e.node >= static_cast<int>(k))
        fail("DAG: node '", n.name, "' input ", i, " refers to node ", e.node, ", not an earlier node (topological order)");
      const Node& p = nodes[e.node];
      if (e.output < 0 || e.output >= static_cast<int>(p.outputs.size()))
        fail("DAG: node '", n.name, "' reads output ", e.output, " of '", p.name, "', which has ", p.outputs.size());
      bool linked = false;
      for (const Use& u : p.users[e.output]) linked |= (u.node == n.id && u.input == static_cast<int>(i));
      if (!linked) fail("DAG: edge '", p.name, "' -> '", n.name, "' is missing on the producer side");
      const TensorMeta& producer = p.outputs[e.output];
      const Coord4 shape = e.range.backing(producer).padded();
      if (e.range.alias && (e.range.alias->offset < 0 ||
                            e.range.alias->offset + e.range.backing(producer).numel() > producer.numel()))
        fail("DAG: reshape alias ", e.range.str(), " of edge '", p.name, "' -> '", n.name, "' is outside tensor ",
             producer.str());
      if (!Box::of_shape(shape).contains(e.range.box) || e.range.box.empty())
        fail("DAG: range ", e.range.box.str(), " of edge '", p.name, "' -> '", n.name, "' is outside tensor ",
             p.outputs[e.output].str());
    }
    for (size_t o = 0; o < n.users.size(); ++o)
      for (const Use& u : n.users[o]) {
        if (u.node <= n.id || u.node >= static_cast<int>(nodes.size()))
          fail("DAG: node '", n.name, "' has a use by node ", u.node, " that is not later in the order");
        const Edge& back = nodes[u.node].inputs.at(u.input);
        if (back.node != n.id || back.output != static_cast<int>(o))
          fail("DAG: use '", n.name, "' -> '", nodes[u.node].name, "' is missing on the consumer side");
      }
  }
  if (outputs != 1) fail("DAG: graph '", name, "' has ", outputs, " output nodes, expected exactly 1");
}

}  // namespace mk
