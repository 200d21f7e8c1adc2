#include "trace/op_units.h"

#include <unordered_map>

#include "ir/error.h"
#include "trace/fuse_rms_norm.h"
#include "trace/fuse_repeat_kv.h"
#include "trace/fuse_rope.h"
#include "trace/tracer.h"

namespace mk {

namespace {

bool is_getitem(const FxNode& n) { return n.op == "call_function" && n.target == "getitem"; }

void collect_refs(const FxArg& a, std::vector<int>& out) {
  if (a.is_node()) out.push_back(static_cast<int>(a.i));
  for (const FxArg& it : a.items) collect_refs(it, out);
}

// users[k]: the nodes whose args or kwargs refer to node k, in FX order, each once.
std::vector<std::vector<int>> users_of(const FxGraph& g) {
  std::vector<std::vector<int>> users(g.nodes.size());
  for (size_t u = 0; u < g.nodes.size(); ++u) {
    std::vector<int> refs;
    for (const FxArg& a : g.nodes[u].args) collect_refs(a, refs);
    for (const auto& [key, a] : g.nodes[u].kwargs) collect_refs(a, refs);
    for (int r : refs) {
      if (r < 0 || r >= static_cast<int>(g.nodes.size()))
        fail("node '", g.nodes[u].name, "' (", g.nodes[u].target, ") refers to node ", r, ", which does not exist");
      if (users[r].empty() || users[r].back() != static_cast<int>(u)) users[r].push_back(static_cast<int>(u));
    }
  }
  return users;
}

// Builds the unit graph of one op (see op_units.h).
class UnitBuilder {
 public:
  UnitBuilder(const FxGraph& g, const std::vector<bool>& live, const std::vector<std::vector<int>>& users)
      : g_(g), live_(live), users_(users) {}

  FxGraph build(int k) {
    unit_ = FxGraph{};
    unit_.name = g_.name;
    unit_.is_backward = g_.is_backward;  // a backward op fails as it would in the whole graph
    index_.clear();
    const int self = copy(k);
    FxArg ret;
    ret.kind = FxArg::Kind::List;
    if (g_.nodes[k].multi_output) {  // return each output something reads (through its getitem)
      for (int u : users_[k])
        if (live_[u] && is_getitem(g_.nodes[u])) {
          FxNode pick = g_.nodes[u];
          pick.args[0].i = self;
          ret.items.push_back(ref(append(std::move(pick))));
        }
    } else {
      ret.items.push_back(ref(self));
    }
    FxNode out;
    out.name = "output";
    out.op = out.target = "output";
    out.args = {ret};
    append(std::move(out));
    return std::move(unit_);
  }

 private:
  static FxArg ref(int i) {
    FxArg a;
    a.kind = FxArg::Kind::Node;
    a.i = i;
    return a;
  }

  int append(FxNode n) {
    unit_.nodes.push_back(std::move(n));
    return static_cast<int>(unit_.nodes.size()) - 1;
  }

  // Node i of g with its references remapped into the unit (their producers imported first).
  int copy(int i) {
    FxNode n = g_.nodes[i];
    for (FxArg& a : n.args) remap(a);
    for (auto& [key, a] : n.kwargs) remap(a);
    return append(std::move(n));
  }

  void remap(FxArg& a) {
    if (a.is_node()) a.i = import(static_cast<int>(a.i));
    for (FxArg& it : a.items) remap(it);
  }

  // A view stays (the tracer folds it into the op's edge); anything else, a getitem included, is
  // computed outside the unit and becomes a contiguous graph input with its meta.
  int import(int i) {
    if (auto it = index_.find(i); it != index_.end()) return it->second;
    const FxNode& n = g_.nodes[i];
    int r;
    if (folds_into_edge(n) && !is_getitem(n)) {
      r = copy(i);
    } else {
      FxNode p;
      p.name = p.target = n.name;
      p.op = "placeholder";
      p.outputs = n.outputs;
      p.multi_output = n.multi_output;
      for (auto& t : p.outputs)
        if (t) {
          int64_t stride = 1;
          for (size_t d = t->shape.size(); d-- > 0;) t->stride[d] = stride, stride *= t->shape[d];
        }
      r = append(std::move(p));
    }
    index_[i] = r;
    return r;
  }

  const FxGraph& g_;
  const std::vector<bool>& live_;
  const std::vector<std::vector<int>>& users_;
  FxGraph unit_;
  std::unordered_map<int, int> index_;  // node of g -> node of the unit
};

}  // namespace

OpUnits op_units(const FxGraph& g) {
  FxGraph fused = g;
  fuse_decomposed_rms_norm(fused);  // rewrites matches in place: node indices stay the same
  fuse_rope(fused);
  fuse_repeat_kv(fused);  // the rank-5 repeat goes with its SDPA readers (alone it cannot compile)
  const std::vector<bool> live_before = live_from_output(g), live = live_from_output(fused);
  const std::vector<std::vector<int>> users_before = users_of(g), users = users_of(fused);
  const int n = static_cast<int>(g.nodes.size());
  OpUnits r;
  r.owner.assign(n, OpUnits::kNotOp);
  for (int k = n; k-- > 0;) {  // users first: a fused-away node takes the owner of its user
    const FxNode& node = fused.nodes[k];
    if (live[k]) {
      if (node.op == "placeholder" || node.op == "get_attr" || node.op == "output") continue;
      r.owner[k] = folds_into_edge(node) ? OpUnits::kFolded : k;
    } else if (live_before[k]) {  // an intermediate of a fusion: its users lead to the fused op
      for (int u : users_before[k])
        if (r.owner[u] >= 0) {
          r.owner[k] = r.owner[u];
          break;
        }
    }
  }
  UnitBuilder builder(fused, live, users);
  for (int k = 0; k < n; ++k)
    if (r.owner[k] == k) r.graphs.emplace_back(k, builder.build(k));
  return r;
}

}  // namespace mk
