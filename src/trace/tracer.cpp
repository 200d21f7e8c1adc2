// FX graph -> DAG (seed §02): prune, classify, resolve ops, fold views into edge ranges, validate.
#include "trace/tracer.h"

#include <limits>

#include "ir/error.h"
#include "itypes/copy.h"
#include "trace/fuse_attention_output.h"
#include "trace/fuse_elementwise.h"
#include "trace/fuse_gemm_act.h"
#include "trace/fuse_rms_norm_gemm.h"
#include "trace/fuse_gemm_rope.h"
#include "trace/fuse_repeat_kv.h"
#include "trace/fuse_residual.h"
#include "trace/fuse_rms_norm.h"
#include "trace/fuse_rope.h"
#include "trace/fuse_swiglu.h"
#include "trace/op_call.h"
#include "trace/resolvers.h"

namespace mk {

namespace {

bool is_call(const FxNode& n, const char* target) { return n.op == "call_function" && n.target == target; }
// Views fold into edge ranges instead of becoming nodes (seed §02 step 4). A reshape (view) of another
// shape folds as a reshape alias; an expand that grows size-1 dims as a broadcast view.
const char* view_schema(const std::string& target) {
  if (target == "aten.select.int") return "self, dim, index";
  if (target == "aten.slice.Tensor") return "self, dim, start, end, step";
  if (target == "aten.t.default") return "self";
  if (target == "aten.transpose.int") return "self, dim0, dim1";
  if (target == "aten.permute.default") return "self, dims";
  if (target == "aten.expand.default") return "self, size, *, implicit";
  if (target == "aten.view.default" || target == "aten._unsafe_view.default") return "self, size";
  if (target == "aten.unsqueeze.default" || target == "aten.squeeze.dim") return "self, dim";
  if (target == "aten.squeeze.dims") return "self, dim";
  if (target == "aten.squeeze.default") return "self";
  // Autograd bookkeeping (parameters that require grad): the same tensor, nothing to compute.
  if (target == "aten.detach.default" || target == "aten.alias.default") return "self";
  return nullptr;
}
bool is_view(const FxNode& n) { return n.op == "call_function" && view_schema(n.target); }
bool is_getitem(const FxNode& n) { return is_call(n, "getitem"); }

void collect_refs(const FxArg& a, std::vector<int>& out) {
  if (a.is_node()) out.push_back(static_cast<int>(a.i));
  for (const FxArg& it : a.items) collect_refs(it, out);
}

std::string dims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

// A tensor's meta as the DAG keeps it; `who` prefixes messages ("input 'x'", "node 'mm' (...)").
TensorMeta to_meta(const FxTensor& t, const std::string& who) {
  if (t.shape.size() > kMaxRank)
    fail(who, ": rank-", t.shape.size(), " tensors are not supported (at most ", kMaxRank, " dims), shape ",
         dims(t.shape));
  // No instruction covers an empty tile (and a zero-size tensor has no slot). Here, not in the FX export,
  // so that fallback="eager" and dry_run judge such ops one by one.
  for (int64_t d : t.shape)
    if (d == 0) fail(who, ": zero-size tensors are not supported, got shape ", dims(t.shape));
  TensorMeta m;
  try {
    m.dtype = dtype_from_name(t.dtype);
  } catch (const CompileError& e) {
    fail(who, ": ", e.what());
  }
  m.shape = t.shape;
  m.device = t.device;
  return m;
}

// Prune (seed §02 step 1): the nodes the output node `out` depends on.
std::vector<bool> live_nodes(const FxGraph& g, int out) {
  std::vector<bool> live(g.nodes.size(), false);
  std::vector<int> stack{out};
  live[out] = true;
  while (!stack.empty()) {
    const FxNode& n = g.nodes[stack.back()];
    stack.pop_back();
    std::vector<int> refs;
    for (const FxArg& a : n.args) collect_refs(a, refs);
    for (const auto& [key, a] : n.kwargs) collect_refs(a, refs);
    for (int r : refs) {
      if (r < 0 || r >= static_cast<int>(g.nodes.size()))
        fail("node '", n.name, "' (", n.target, ") refers to node ", r, ", which does not exist");
      if (!live[r]) stack.push_back(r), live[r] = true;
    }
  }
  return live;
}

class Tracer {
 public:
  explicit Tracer(const FxGraph& g) : g_(g), dag_id_(g.nodes.size(), -1), out_map_(g.nodes.size()) {
    dag_.name = g.name;
  }

  DAG run() {
    reject_backward();
    const int out = output_fx_node();
    const std::vector<bool> live = live_nodes(g_, out);
    int placeholder = 0;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const FxNode& n = g_.nodes[k];
      const bool is_placeholder = n.op == "placeholder";
      if (live[k] && !is_view(n) && !is_getitem(n) && static_cast<int>(k) != out) {
        if (is_placeholder || n.op == "get_attr") add_input(static_cast<int>(k), is_placeholder ? placeholder : -1);
        else add_compute(static_cast<int>(k));
      }
      placeholder += is_placeholder;
    }
    add_output(out);
    dag_.add_use_links();
    dag_.validate();
    return std::move(dag_);
  }

 private:
  void reject_backward() const {
    if (!g_.is_backward) return;
    std::string first = "none";
    for (const FxNode& n : g_.nodes)
      if (n.op == "call_function" || n.op == "call_method" || n.op == "call_module") {
        first = n.name + " " + n.target;
        break;
      }
    fail("megakittens has no backward instruction types: cannot compile the backward graph of '", g_.name,
         "' (first op: ", first, ")");
  }

  int output_fx_node() const {
    int out = -1;
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (g_.nodes[k].op == "output") {
        if (out >= 0) fail("graph '", g_.name, "' has two output nodes ('", g_.nodes[out].name, "', '", g_.nodes[k].name, "')");
        out = static_cast<int>(k);
      }
    if (out < 0) fail("graph '", g_.name, "' has no output node");
    return out;
  }

  // DFS back from the output: nodes nothing reaches are dead.
  int push(Node node, int fx) {
    node.id = static_cast<int>(dag_.nodes.size());
    dag_.nodes.push_back(std::move(node));
    dag_id_[fx] = dag_.nodes.back().id;
    return dag_.nodes.back().id;
  }

  void add_input(int fx, int input_index) {
    const FxNode& n = g_.nodes[fx];
    const std::string who = "input '" + n.name + "'";
    if (n.multi_output || n.outputs.size() != 1 || !n.outputs[0])
      fail(who, ": only tensor inputs are supported (", n.op, " ", n.target, " is not a tensor)");
    const FxTensor& t = *n.outputs[0];
    if (!t.contiguous())
      fail(who, ": non-contiguous tensors are not supported (shape ", dims(t.shape), ", stride ", dims(t.stride), ")");
    Node node;
    node.kind = Node::Kind::Input;
    node.name = n.name;
    node.target = n.target;
    node.outputs.push_back(to_meta(t, who));
    if (n.op == "get_attr") node.attr = n.target;
    else node.input_index = input_index;
    out_map_[fx] = {0};
    push(std::move(node), fx);
  }

  void add_compute(int fx) {
    const FxNode& n = g_.nodes[fx];
    Resolution r = resolve_op(g_, n);
    Node node;
    node.kind = Node::Kind::Compute;
    node.name = n.name;
    node.target = r.target;
    node.itype = r.itype;
    const std::string who = "node '" + n.name + "' (" + n.target + ")";
    out_map_[fx].assign(n.outputs.size(), -1);
    for (int o : r.kept) {
      if (o < 0 || o >= static_cast<int>(n.outputs.size()) || !n.outputs[o])
        fail(who, ": output ", o, " (the one megakittens computes) is not a tensor (", n.outputs.size(), " outputs)");
      out_map_[fx][o] = static_cast<int>(node.outputs.size());
      node.outputs.push_back(to_meta(*n.outputs[o], who));
    }
    for (const FxArg* a : r.inputs) node.inputs.push_back(edge(*a, who, false));
    // [Note: view copies] a view the IType cannot read (a transpose for an elementwise op, a broadcast
    // for anything but a binary op, a slice for Attention) is copied into a fresh tensor first.
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const Edge& e = node.inputs[k];
      const TensorMeta backing = e.range.backing(dag_.nodes[e.node].outputs[e.output]);
      if (!node.itype->reads_view(static_cast<int>(k), e.range, backing.padded()))
        node.inputs[k] = materialize(e, n.name + "_in" + std::to_string(k));
    }
    if (r.bind) {
      std::vector<TensorRange> views;
      for (const Edge& e : node.inputs) views.push_back(e.range);
      try {
        node.itype = r.bind(views);
      } catch (const CompileError& e) {
        const std::string msg = e.what();
        if (msg.rfind("node '", 0) == 0) throw;
        fail(who, ": ", msg);
      }
    }
    push(std::move(node), fx);
  }

  void add_output(int fx) {
    const FxNode& n = g_.nodes[fx];
    const std::string who = "node '" + n.name + "' (output)";
    Node node;
    node.kind = Node::Kind::Output;
    node.name = n.name;
    node.target = "output";
    if (n.args.empty()) fail(who, ": has no arguments");
    const FxArg& ret = n.args[0];
    const std::vector<FxArg> single{ret};
    const std::vector<FxArg>& items = ret.kind == FxArg::Kind::List ? ret.items : single;
    for (size_t k = 0; k < items.size(); ++k) {
      if (!items[k].is_node()) fail(who, ": output ", k, " is not a tensor, got ", items[k].str());
      node.inputs.push_back(edge(items[k], who, true));
    }
    if (node.inputs.empty())
      fail("graph '", g_.name, "' returns no tensor: megakittens needs at least one tensor output");
    push(std::move(node), fx);
  }

  // [Note: view copies] A Copy node that materialises the view of edge `e` as a fresh contiguous
  // tensor, and the edge that reads it whole. One per distinct (producer, output, view): consumers of
  // the same view share it. `name` names the node ("<consumer>_in<k>_copy", "<view node>_copy").
  Edge materialize(const Edge& e, const std::string& name) {
    int id = -1;
    for (const auto& [from, node] : copies_)
      if (from.node == e.node && from.output == e.output && from.range == e.range) id = node;
    if (id < 0) {
      Node node;
      node.kind = Node::Kind::Compute;
      node.name = name + "_copy";
      node.target = "megakittens.copy.default";
      node.itype = std::make_shared<Copy>(Copy::src_for(e.range));
      TensorMeta meta = dag_.nodes[e.node].outputs[e.output];
      meta.shape = e.range.view_shape;
      node.outputs.push_back(meta);
      node.inputs.push_back(e);
      node.id = static_cast<int>(dag_.nodes.size());
      dag_.nodes.push_back(std::move(node));
      id = dag_.nodes.back().id;
      copies_.emplace_back(e, id);
    }
    Edge out;
    out.node = id;
    out.range = TensorRange::full(dag_.nodes[id].outputs[0].shape);
    return out;
  }

  // The edge for tensor argument `arg`: walk back through select/slice and getitem to the producing
  // DAG node, then replay the views forwards on its output.
  Edge edge(const FxArg& arg, const std::string& who, bool to_output) {
    std::vector<const FxNode*> views;  // consumer first
    const FxNode* picker = nullptr;    // the getitem that chose an output of a multi-output node
    int cur = static_cast<int>(arg.i);
    int out = -1;
    for (;;) {
      const FxNode& n = g_.nodes[cur];
      if (is_view(n)) {
        views.push_back(&n);
        const OpCall c(g_, n, n.target, view_schema(n.target));
        cur = static_cast<int>(c.tensor("self").i);
      } else if (is_getitem(n)) {
        const std::string gw = "node '" + n.name + "' (getitem)";
        if (picker) fail(gw, ": nested tuples are not supported");
        if (n.args.size() != 2 || !n.args[0].is_node() || n.args[1].kind != FxArg::Kind::Int)
          fail(gw, ": expected getitem(node, int), got ", FxArg{FxArg::Kind::List, 0, 0.0, "", n.args}.str());
        const FxNode& src = g_.nodes[n.args[0].i];
        if (!src.multi_output)
          fail(gw, ": indexing the tensor '", src.name, "' is not supported (getitem only picks outputs of ops)");
        picker = &n;
        out = static_cast<int>(n.args[1].i);
        cur = static_cast<int>(n.args[0].i);
      } else {
        break;
      }
    }
    const FxNode& p = g_.nodes[cur];
    if (out < 0) {
      if (p.multi_output) fail(who, ": reads the tuple result of '", p.name, "' (", p.target, ") without getitem");
      out = 0;
    }
    const auto& map = out_map_[cur];
    if (dag_id_[cur] < 0) fail(who, ": internal: producer '", p.name, "' is not in the DAG yet");
    if (out >= static_cast<int>(map.size()) || map[out] < 0)
      fail(who, ": reads output ", out, " of ", p.target, " (node '", p.name, "'", picker ? " via '" + picker->name + "'" : "",
           "), but output ", out, " of ", p.target, " is not computed by megakittens",
           // SDPA's statistics outputs are read only when autograd saves them for backward.
           p.target.find("scaled_dot_product") != std::string::npos
               ? " (autograd saves it for backward: run the model under torch.no_grad() or torch.inference_mode())"
               : "");
    Edge e;
    e.node = dag_id_[cur];
    e.output = map[out];
    e.range = TensorRange::full(dag_.nodes[e.node].outputs[e.output].shape);
    std::vector<int64_t> producer = dag_.nodes[e.node].outputs[e.output].shape;
    for (size_t k = views.size(); k-- > 0;) {
      // [Note: view copies] a reshape of a view that is not one contiguous run (a transpose, a column
      // slice) reshapes a copy of it instead.
      const FxNode& v = *views[k];
      const bool reshapes = is_reshape(v.target) && v.outputs.size() == 1 && v.outputs[0] &&
                            v.outputs[0]->shape != e.range.view_shape;
      if (reshapes && !e.range.contiguous_run(producer)) {
        e = materialize(e, views[k]->name);
        producer = e.range.view_shape;
      }
      e.range = apply_view(*views[k], e.range, producer);
    }
    // A view in front of the output stays on the edge: the dispatcher returns that view of the slot
    // (zero-copy, aliasing like eager), e.g. a transposed weight AOTAutograd saves for backward.
    return e;
  }

  TensorRange apply_view(const FxNode& n, const TensorRange& r, const std::vector<int64_t>& producer) const {
    const OpCall c(g_, n, n.target, view_schema(n.target));
    const TensorRange out = fold_view(c, r, producer);
    // An empty slice: no instruction reads an empty tile (to_meta's rule for computed tensors).
    for (int64_t d : out.view_shape)
      if (d == 0) c.fail("zero-size tensors are not supported, got shape ", dims(out.view_shape));
    // The graph knows the view's shape too: a mismatch is a bug in the folding, not in the graph.
    if (n.outputs.size() == 1 && n.outputs[0] && n.outputs[0]->shape != out.view_shape)
      c.fail("internal: the folded view has shape ", dims(out.view_shape), ", the graph says ",
             dims(n.outputs[0]->shape));
    return out;
  }

  // `producer`: the shape of the tensor the view chain starts on (reshapes alias runs of it).
  static TensorRange fold_view(const OpCall& c, const TensorRange& r, const std::vector<int64_t>& producer) {
    const std::string& t = c.target();
    try {
      if (t == "aten.unsqueeze.default") {
        std::vector<int64_t> shape = r.view_shape;
        int64_t d = c.i64("dim");
        const int64_t rank = static_cast<int64_t>(shape.size());
        if (d < -rank - 1 || d > rank) c.fail("unsqueeze: dim ", d, " is out of range for rank ", rank);
        if (d < 0) d += rank + 1;
        shape.insert(shape.begin() + d, 1);
        return r.reshape(shape, producer);
      }
      if (t == "aten.squeeze.dim" || t == "aten.squeeze.dims" || t == "aten.squeeze.default") {
        const int64_t rank = static_cast<int64_t>(r.view_shape.size());
        std::vector<int64_t> which;
        if (t == "aten.squeeze.dim") which = {c.i64("dim")};
        else if (t == "aten.squeeze.dims") which = c.ints("dim");
        else for (int64_t k = 0; k < rank; ++k) which.push_back(k);
        std::vector<bool> drop(rank, false);
        for (int64_t d : which) {
          if (d < -rank || d >= rank) c.fail("squeeze: dim ", d, " is out of range for rank ", rank);
          d = d < 0 ? d + rank : d;
          drop[d] = r.view_shape[d] == 1;
        }
        std::vector<int64_t> shape;
        for (int64_t k = 0; k < rank; ++k)
          if (!drop[k]) shape.push_back(r.view_shape[k]);
        return shape == r.view_shape ? r : r.reshape(shape, producer);
      }
      if (t == "aten.t.default") {
        if (r.view_shape.size() > 2) c.fail("t() expects a tensor with <= 2 dims, got ", dims(r.view_shape));
        return r.view_shape.size() == 2 ? r.transpose(0, 1) : r;
      }
      if (t == "aten.transpose.int") return r.transpose(c.i64("dim0"), c.i64("dim1"));
      if (t == "aten.detach.default" || t == "aten.alias.default") return r;
      if (t == "aten.permute.default") return r.permute(c.ints("dims"));
      if (t == "aten.expand.default" || t == "aten.view.default" || t == "aten._unsafe_view.default") {
        const std::vector<int64_t> size = c.ints("size");
        bool same = size.size() == r.view_shape.size();
        int inferred = 0;  // -1: keep the size (expand) / infer it (view: at most one)
        for (size_t k = 0; same && k < size.size(); ++k) {
          same = size[k] == r.view_shape[k] || size[k] == -1;
          inferred += size[k] == -1;
        }
        if (t != "aten.expand.default") same &= inferred <= 1;
        if (!same && t != "aten.expand.default") return r.reshape(size, producer);  // [Note: reshape aliases]
        if (!same) return r.expand(size);  // [Note: broadcast views]
        return r;
      }
      if (t == "aten.select.int") return r.select(c.i64("dim"), c.i64("index"));
      if (const int64_t step = c.is_none("step") ? 1 : c.i64("step"); step != 1)
        c.fail("slices with step != 1 are not supported, got step=", step);
      const int64_t start = c.is_none("start") ? 0 : c.i64("start");
      const int64_t end = c.is_none("end") ? std::numeric_limits<int64_t>::max() : c.i64("end");
      return r.slice(c.is_none("dim") ? 0 : c.i64("dim"), start, end);
    } catch (const CompileError& e) {
      const std::string msg = e.what();
      if (msg.rfind("node '", 0) == 0) throw;
      c.fail(msg);
    }
  }

  // The view ops fold_view turns into TensorRange::reshape (when the shape changes).
  static bool is_reshape(const std::string& t) {
    return t == "aten.view.default" || t == "aten._unsafe_view.default" || t == "aten.unsqueeze.default" ||
           t == "aten.squeeze.dim" || t == "aten.squeeze.dims" || t == "aten.squeeze.default";
  }

  const FxGraph& g_;
  DAG dag_;
  std::vector<std::pair<Edge, int>> copies_;  // materialised views -> their Copy node
  std::vector<int> dag_id_;                 // per FX node: its DAG node, -1 if none
  std::vector<std::vector<int>> out_map_;  // per FX node: FX output -> DAG output, -1 if dropped
};

}  // namespace

namespace {
// The FX-level fusions, run before op resolution (their intermediates are left dead).
FxGraph fused_graph(const FxGraph& g) {
  FxGraph fused = g;
  fuse_decomposed_rms_norm(fused);
  fuse_rope(fused);
  fuse_repeat_kv(fused);
  fuse_residual_add(fused);
  fuse_swiglu(fused);
  return fused;
}
}  // namespace

std::vector<SupportIssue> support_report(const FxGraph& g, bool fuse) {
  const FxGraph fused = fuse ? fused_graph(g) : g;
  // Only nodes the output depends on (the fusion leaves its intermediates dead).
  std::vector<bool> live(fused.nodes.size(), false);
  for (size_t k = fused.nodes.size(); k-- > 0;)
    if (fused.nodes[k].op == "output") {
      live = live_nodes(fused, static_cast<int>(k));
      break;
    }
  std::vector<SupportIssue> issues;
  for (size_t k = 0; k < fused.nodes.size(); ++k) {
    const FxNode& n = fused.nodes[k];
    if (!live[k] || n.op == "placeholder" || n.op == "get_attr" || n.op == "output" || is_view(n) || is_getitem(n))
      continue;
    try {
      (void)resolve_op(fused, n);
    } catch (const CompileError& e) {
      issues.push_back({n.name, n.target, e.what()});
    }
  }
  if (issues.empty()) {
    try {
      (void)Tracer(fused).run();
    } catch (const CompileError& e) {
      issues.push_back({"", "", e.what()});
    }
  }
  return issues;
}

bool folds_into_edge(const FxNode& n) { return is_view(n) || is_getitem(n); }

std::vector<bool> live_from_output(const FxGraph& g) {
  for (size_t k = g.nodes.size(); k-- > 0;)
    if (g.nodes[k].op == "output") return live_nodes(g, static_cast<int>(k));
  return std::vector<bool>(g.nodes.size(), false);
}

DAG trace(const FxGraph& g, bool fuse) {
  if (!fuse) return Tracer(g).run();
  const FxGraph fused = fused_graph(g);
  DAG dag = Tracer(fused).run();
  fuse_gemm_act(dag);
  fuse_gemm_rope(dag);
  fuse_attention_output(dag);
  fuse_elementwise(dag);
  fuse_rms_norm_gemm(dag);
  return dag;
}

}  // namespace mk
