#include "trace/fuse_elementwise.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <set>

#include "itypes/elementwise_fused.h"

namespace mk {

namespace {

bool same_edge(const Edge& a, const Edge& b) { return a.node == b.node && a.output == b.output && a.range == b.range; }

// Whether the pass may fuse n: an ElementwiseUnary, or an ElementwiseBinary not in place, reading only
// floating-point tensors (any other operand stays with its own node, whose validate() names it).
bool elementwise(const DAG& dag, const Node& n) {
  if (!n.is_compute() || n.outputs.size() != 1) return false;
  const auto* b = dynamic_cast<const ElementwiseBinary*>(n.itype.get());
  if (!dynamic_cast<const ElementwiseUnary*>(n.itype.get()) && !(b && !b->inplace())) return false;
  return std::all_of(n.inputs.begin(), n.inputs.end(),
                     [&](const Edge& e) { return is_float(dag.nodes[e.node].outputs[e.output].dtype); });
}

int step_count(const Node& n) {
  const auto* u = dynamic_cast<const ElementwiseUnary*>(n.itype.get());
  return u ? static_cast<int>(u->steps().size()) : 1;
}

class Group {
 public:
  Group(const DAG& dag, int root) : dag_(dag), root_(root), members_{root} {}

  // Adds producer p if the structural rules of fuse_elementwise (header) allow it.
  bool try_absorb(int p, const std::vector<char>& taken) {
    const Node& n = dag_.nodes[p];
    if (taken[p] || members_.count(p) || !elementwise(dag_, n)) return false;
    if (n.outputs[0].shape != dag_.nodes[root_].outputs[0].shape) return false;
    for (const Use& u : n.users[0]) {
      if (!members_.count(u.node)) return false;
      const TensorRange& r = dag_.nodes[u.node].inputs[u.input].range;
      if (r.alias || !r.is_full(n.outputs[0].padded())) return false;
    }
    members_.insert(p);
    return true;
  }

  // Drops the earliest member (it reads no other member, so its value simply becomes an outer input)
  // until the group fits one instruction: at most kMaxInputs outer views and kMaxSteps steps. Growing
  // first and pruning after finds groups whose input count only falls once they are whole (a diamond).
  void prune() {
    auto steps = [&] {
      int s = 0;
      for (int m : members_) s += step_count(dag_.nodes[m]);
      return s;
    };
    while (members_.size() > 1 &&
           (outer().size() > static_cast<size_t>(ElementwiseFused::kMaxInputs) || steps() > ElementwiseFused::kMaxSteps))
      members_.erase(members_.begin());
  }

  // The distinct views the members read from outside the group, in member order.
  std::vector<Edge> outer() const {
    std::vector<Edge> out;
    for (int m : members_)
      for (const Edge& e : dag_.nodes[m].inputs)
        if (!members_.count(e.node) && std::none_of(out.begin(), out.end(), [&](const Edge& o) { return same_edge(o, e); }))
          out.push_back(e);
    return out;
  }

  const std::set<int>& members() const { return members_; }

  // The fused IType over outer(): one step per unary op or binary node, in member (topological) order.
  std::shared_ptr<ElementwiseFused> itype(const std::vector<Edge>& in) const {
    const int n_in = static_cast<int>(in.size());
    const Coord4 out = dag_.nodes[root_].outputs[0].padded();
    std::array<uint8_t, ElementwiseFused::kMaxInputs> bcast{};
    for (int k = 0; k < n_in; ++k) bcast[k] = broadcast_mask(in[k].range, out);
    std::vector<FusedStep> steps;
    std::vector<int> value(dag_.nodes.size(), -1);  // member -> the reference of its value
    auto ref = [&](const Edge& e) {
      if (members_.count(e.node)) return value[e.node];
      for (int k = 0; k < n_in; ++k)
        if (same_edge(in[k], e)) return k;
      return -1;  // unreachable: outer() lists every outside view
    };
    for (int m : members_) {
      const Node& node = dag_.nodes[m];
      // [Note: fused rounding] An intermediate value stays fp32 unless its node was float16, whose range
      // (65504) could turn a finite fp32 value into inf: bf16 has fp32's range, so skipping its rounding
      // changes only low bits, as Inductor's fusion does. The root's value is rounded by the store.
      const DType node_dt = node.outputs[0].dtype;
      const DType dt = m == root_ || node_dt == DType::f16 ? node_dt : DType::f32;
      if (const auto* u = dynamic_cast<const ElementwiseUnary*>(node.itype.get())) {
        int a = ref(node.inputs[0]);
        for (size_t i = 0; i < u->steps().size(); ++i) {
          FusedStep s;
          s.unary = u->steps()[i];
          s.a = a;
          s.dtype = i + 1 == u->steps().size() ? dt : DType::f32;  // the op list rounds once, at its end
          steps.push_back(s);
          a = n_in + static_cast<int>(steps.size()) - 1;
        }
      } else {
        const auto& b = static_cast<const ElementwiseBinary&>(*node.itype);
        FusedStep s;
        s.binary = true;
        s.op = b.binary_op();
        s.alpha = b.alpha();
        s.a = ref(node.inputs[0]);
        s.b = ref(node.inputs[1]);
        s.dtype = dt;
        steps.push_back(s);
      }
      value[m] = n_in + static_cast<int>(steps.size()) - 1;
    }
    return std::make_shared<ElementwiseFused>(n_in, std::move(steps), bcast);
  }

 private:
  const DAG& dag_;
  int root_;
  std::set<int> members_;  // ascending ids: topological order
};

}  // namespace

int fuse_elementwise(DAG& dag) {
  const int count = static_cast<int>(dag.nodes.size());
  std::vector<int> into(count);
  for (int k = 0; k < count; ++k) into[k] = k;
  std::vector<char> taken(count, 0);
  int groups = 0;
  for (int r = count; r-- > 0;) {
    if (taken[r] || !elementwise(dag, dag.nodes[r])) continue;
    Group g(dag, r);
    // Latest producer first: all of a node's readers (later nodes) are decided before it is.
    std::priority_queue<int> next;
    std::set<int> seen;
    auto push_producers = [&](int m) {
      for (const Edge& e : dag.nodes[m].inputs)
        if (seen.insert(e.node).second) next.push(e.node);
    };
    push_producers(r);
    while (!next.empty()) {
      const int p = next.top();
      next.pop();
      if (g.try_absorb(p, taken)) push_producers(p);
    }
    g.prune();
    if (g.members().size() < 2) continue;
    const std::vector<Edge> in = g.outer();
    Node& root = dag.nodes[r];
    root.itype = g.itype(in);
    root.inputs = in;
    // The other members vanish; nothing outside the group reads them, so where they fold is moot.
    for (int m : g.members())
      if (m != r) taken[m] = 1, into[m] = 0;
    ++groups;
  }
  if (groups > 0) dag.fold_nodes(into);
  return groups;
}

}  // namespace mk
