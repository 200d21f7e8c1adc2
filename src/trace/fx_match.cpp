#include "trace/fx_match.h"

namespace mk {

void FxMatch::recount() {
  uses.assign(g.nodes.size(), 0);
  for (const FxNode& n : g.nodes) {
    for (const FxArg& a : n.args) count(a);
    for (const auto& [k, v] : n.kwargs) count(v);
  }
}

void FxMatch::count(const FxArg& a) {
  if (a.is_node()) ++uses[a.i];
  for (const FxArg& x : a.items) count(x);
}

std::string FxMatch::cast_dtype(const FxNode* n) {
  if (!call(n, "aten._to_copy.default") || n->args.size() != 1) return "";
  std::string dtype;
  for (const auto& [k, v] : n->kwargs) {
    if (k == "dtype" && v.kind == FxArg::Kind::Str) dtype = v.s.rfind("torch.", 0) == 0 ? v.s.substr(6) : v.s;
    else if (k == "layout" && v.kind == FxArg::Kind::Str && v.s == "torch.strided") continue;
    else if (k == "device" && v.kind == FxArg::Kind::Str) continue;  // same device: checked by the metas
    else return "";
  }
  return dtype;
}

FxArg FxMatch::node_arg(int64_t k) {
  FxArg a;
  a.kind = FxArg::Kind::Node;
  a.i = k;
  return a;
}

FxArg FxMatch::int_list(const std::vector<int64_t>& v) {
  FxArg l;
  l.kind = FxArg::Kind::List;
  for (int64_t x : v) {
    FxArg e;
    e.kind = FxArg::Kind::Int;
    e.i = x;
    l.items.push_back(e);
  }
  return l;
}

int FxMatch::sole_user(int k) const {
  if (uses[k] != 1) return -1;
  for (size_t u = k + 1; u < g.nodes.size(); ++u) {
    const FxNode& n = g.nodes[u];
    bool hit = false;
    for (const FxArg& a : n.args) hit |= refers(a, k);
    for (const auto& [key, v] : n.kwargs) hit |= refers(v, k);
    if (hit) return static_cast<int>(u);
  }
  return -1;
}

bool FxMatch::refers(const FxArg& a, int k) {
  if (a.is_node() && a.i == k) return true;
  for (const FxArg& x : a.items)
    if (refers(x, k)) return true;
  return false;
}

}  // namespace mk
