// The aten FX graph as the Python front end hands it over, node by node (DESIGN §2).
// Nothing here is interpreted yet: the tracer (trace/) turns it into a DAG.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mk {

// One FX argument: a constant, a reference to an earlier node, or a list of arguments.
struct FxArg {
  enum class Kind : uint8_t { None, Node, Int, Float, Bool, Str, List };
  Kind kind = Kind::None;
  int64_t i = 0;         // Int, Bool (0/1), Node (index into FxGraph::nodes)
  double f = 0.0;        // Float
  std::string s;         // Str (also dtype / device / layout / op names, as their str())
  std::vector<FxArg> items;  // List (also tuples)

  bool is_node() const { return kind == Kind::Node; }
  std::string str() const;  // for error messages
};

// node.meta["val"] of one tensor output: shape, stride, dtype and device.
struct FxTensor {
  std::vector<int64_t> shape, stride;
  std::string dtype;   // "bfloat16", ...
  std::string device;  // "cpu", "cuda:0"
  bool contiguous() const;
};

struct FxNode {
  std::string name;    // FX node name, e.g. "mm_1"
  std::string op;      // placeholder | get_attr | call_function | call_method | call_module | output
  std::string target;  // "aten.mm.default", "getitem", "auto_functionalized_v2", placeholder name...
  std::vector<FxArg> args;
  std::vector<std::pair<std::string, FxArg>> kwargs;
  // One entry per tensor output (a single-tensor node has one); nullopt for a non-tensor output.
  std::vector<std::optional<FxTensor>> outputs;
  bool multi_output = false;  // meta["val"] was a tuple/list (outputs are picked with getitem)

  const FxArg* kwarg(const std::string& key) const;
};

struct FxGraph {
  std::string name = "graph";  // qualname of the compiled function, used in file names
  std::vector<FxNode> nodes;   // in FX (topological) order
  bool is_backward = false;    // set by the front end for the AOTAutograd backward graph
};

}  // namespace mk
