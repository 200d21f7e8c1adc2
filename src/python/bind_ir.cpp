// Errors, the FX graph hand-over, trace() and read-only DAG views (docs/core-api.md).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ir/error.h"
#include "itypes/itype.h"
#include "python/bind.h"
#include "trace/tracer.h"

using namespace mk;

namespace {

// Marks an FX argument that refers to node `index` of the list given to FxGraph.from_nodes.
struct NodeRef {
  int64_t index = 0;
};

FxArg to_arg(nb::handle h) {
  FxArg a;
  if (h.is_none()) return a;
  // bool before int: Python's bool is an int subclass.
  if (nb::isinstance<nb::bool_>(h)) {
    a.kind = FxArg::Kind::Bool;
    a.i = nb::cast<bool>(h);
  } else if (nb::isinstance<nb::int_>(h)) {
    a.kind = FxArg::Kind::Int;
    a.i = nb::cast<int64_t>(h);
  } else if (nb::isinstance<nb::float_>(h)) {
    a.kind = FxArg::Kind::Float;
    a.f = nb::cast<double>(h);
  } else if (nb::isinstance<nb::str>(h)) {
    a.kind = FxArg::Kind::Str;
    a.s = nb::cast<std::string>(h);
  } else if (nb::isinstance<NodeRef>(h)) {
    a.kind = FxArg::Kind::Node;
    a.i = nb::cast<const NodeRef&>(h).index;
  } else if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    a.kind = FxArg::Kind::List;
    for (nb::handle it : h) a.items.push_back(to_arg(it));
  } else {
    // dtype, device, memory format, OpOverload...: the tracer matches their str().
    a.kind = FxArg::Kind::Str;
    a.s = nb::cast<std::string>(nb::str(h));
  }
  return a;
}

std::vector<int64_t> ints(nb::handle h) {
  std::vector<int64_t> v;
  for (nb::handle it : h) v.push_back(nb::cast<int64_t>(it));
  return v;
}

FxNode to_node(nb::handle h, size_t k) {
  const nb::tuple t = nb::cast<nb::tuple>(h);
  if (t.size() != 7)
    fail("FxGraph.from_nodes: node ", k, " must be (name, op, target, args, kwargs, outputs, multi_output), got ",
         t.size(), " fields");
  FxNode n;
  n.name = nb::cast<std::string>(t[0]);
  n.op = nb::cast<std::string>(t[1]);
  n.target = nb::cast<std::string>(t[2]);
  for (nb::handle a : t[3]) n.args.push_back(to_arg(a));
  for (auto [key, value] : nb::cast<nb::dict>(t[4])) n.kwargs.emplace_back(nb::cast<std::string>(key), to_arg(value));
  for (nb::handle o : t[5]) {
    if (o.is_none()) {
      n.outputs.push_back(std::nullopt);
      continue;
    }
    const nb::tuple ot = nb::cast<nb::tuple>(o);
    if (ot.size() != 4) fail("FxGraph.from_nodes: node '", n.name, "': an output is (shape, stride, dtype, device)");
    n.outputs.push_back(FxTensor{ints(ot[0]), ints(ot[1]), nb::cast<std::string>(ot[2]), nb::cast<std::string>(ot[3])});
  }
  n.multi_output = nb::cast<bool>(t[6]);
  return n;
}

FxGraph from_nodes(const std::string& name, nb::list nodes, bool is_backward) {
  FxGraph g;
  g.name = name;
  g.is_backward = is_backward;
  for (size_t k = 0; k < nodes.size(); ++k) g.nodes.push_back(to_node(nodes[k], k));
  return g;
}

const char* kind_name(Node::Kind k) {
  switch (k) {
    case Node::Kind::Input: return "input";
    case Node::Kind::Compute: return "compute";
    case Node::Kind::Output: return "output";
  }
  return "?";
}

nb::tuple box_tuple(const Box& b) {
  return nb::make_tuple(nb::make_tuple(b.lo[0], b.hi[0]), nb::make_tuple(b.lo[1], b.hi[1]),
                        nb::make_tuple(b.lo[2], b.hi[2]), nb::make_tuple(b.lo[3], b.hi[3]));
}

}  // namespace

void bind_ir(nb::module_& m) {
  nb::exception<CompileError>(m, "CompileError", PyExc_RuntimeError);
  nb::exception<DeadlockError>(m, "DeadlockError", PyExc_RuntimeError);
  nb::exception<RaceError>(m, "RaceError", PyExc_RuntimeError);

  nb::class_<NodeRef>(m, "NodeRef")
      .def(nb::init<int64_t>(), nb::arg("index"))
      .def_ro("index", &NodeRef::index)
      .def("__repr__", [](const NodeRef& r) { return "NodeRef(" + std::to_string(r.index) + ")"; });

  nb::class_<FxGraph>(m, "FxGraph")
      .def_static("from_nodes", &from_nodes, nb::arg("name"), nb::arg("nodes"), nb::arg("is_backward") = false,
                  "Builds the C++ FX graph from (name, op, target, args, kwargs, outputs, multi_output) tuples.")
      .def_ro("name", &FxGraph::name)
      .def_ro("is_backward", &FxGraph::is_backward)
      .def("__len__", [](const FxGraph& g) { return g.nodes.size(); });

  nb::class_<TensorMeta>(m, "TensorMeta")
      .def_prop_ro("dtype", [](const TensorMeta& t) { return std::string(dtype_name(t.dtype)); })
      .def_ro("shape", &TensorMeta::shape)
      .def_ro("device", &TensorMeta::device)
      .def("__str__", &TensorMeta::str)
      .def("__repr__", [](const TensorMeta& t) { return "TensorMeta(" + t.str() + ")"; })
      .def("__eq__", [](const TensorMeta& a, const TensorMeta& b) { return a == b; });

  nb::class_<Edge>(m, "Edge")
      .def_ro("node", &Edge::node)
      .def_ro("output", &Edge::output)
      .def_prop_ro("box", [](const Edge& e) { return box_tuple(e.range.box); })
      .def_prop_ro("view_shape", [](const Edge& e) { return e.range.view_shape; })
      .def("__repr__", [](const Edge& e) {
        return "Edge(node=" + std::to_string(e.node) + ", output=" + std::to_string(e.output) + ", " + e.range.str() + ")";
      });

  nb::class_<Node>(m, "Node")
      .def_ro("id", &Node::id)
      .def_prop_ro("kind", [](const Node& n) { return std::string(kind_name(n.kind)); })
      .def_ro("name", &Node::name)
      .def_ro("target", &Node::target)
      .def_prop_ro("itype", [](const Node& n) -> std::optional<std::string> {
        if (!n.itype) return std::nullopt;
        return n.itype->str();
      })
      .def_ro("inputs", &Node::inputs)
      .def_ro("outputs", &Node::outputs)
      .def_ro("input_index", &Node::input_index)
      .def_ro("attr", &Node::attr)
      .def("__repr__", [](const Node& n) {
        return "Node(" + std::to_string(n.id) + ", " + kind_name(n.kind) + ", '" + n.name + "', " +
               (n.itype ? n.itype->str() : n.target) + ")";
      });

  nb::class_<DAG>(m, "DAG")
      .def_ro("name", &DAG::name)
      .def_ro("nodes", &DAG::nodes)
      .def("validate", &DAG::validate, "The seed's five structural checks; raises CompileError.")
      .def("__len__", [](const DAG& d) { return d.nodes.size(); });

  m.def("support_report",
        [](const FxGraph& g, bool fuse) {
          nb::list out;
          for (const SupportIssue& i : support_report(g, fuse)) out.append(nb::make_tuple(i.node, i.target, i.reason));
          return out;
        },
        nb::arg("graph"), nb::arg("fuse") = true,
        "dry_run's report: (node, target, reason) for every op without an instruction type, else the first "
        "trace error (node and target empty).");
  m.def("trace", &trace, nb::arg("graph"), nb::arg("fuse") = true,
        "FX graph -> DAG (seed §02): prune, classify, resolve ops, fold views; fuse=False skips the fusion "
        "passes. Raises CompileError.");
}
