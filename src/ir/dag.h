// The node-centric DAG the tracer builds (seed §02): input, compute and output nodes; views live
// on the edges as TensorRanges, not as nodes.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace mk {

class IType;

// A consumer's input: output `output` of node `node`, seen through `range`.
struct Edge {
  int node = -1;
  int output = 0;
  TensorRange range;
};

// A consumer of one output: input slot `input` of node `node`.
struct Use {
  int node = -1;
  int input = 0;
};

struct Node {
  enum class Kind { Input, Compute, Output };
  int id = -1;
  Kind kind = Kind::Compute;
  std::string name;    // FX node name
  std::string target;  // FX target ("aten.mm.default"; placeholder name for inputs)
  std::shared_ptr<const IType> itype;  // Compute only
  std::vector<Edge> inputs;
  std::vector<TensorMeta> outputs;
  std::vector<std::vector<Use>> users;  // per output
  int input_index = -1;  // Input from a placeholder: its position among the runtime arguments
  std::string attr;      // Input from get_attr: the attribute path

  bool is_input() const { return kind == Kind::Input; }
  bool is_compute() const { return kind == Kind::Compute; }
  bool is_output() const { return kind == Kind::Output; }
};

struct DAG {
  std::string name = "graph";
  std::vector<Node> nodes;  // topological order

  int output_node() const;  // index of the single output node
  // The seed's five checks: each node exactly one kind, one output node, topological order, every
  // edge recorded on both endpoints, every range inside its tensor. Throws CompileError.
  void validate() const;
  int add_use_links();  // rebuilds `users` from `inputs`; returns the number of edges
  // Removes every node k with into[k] != k after sending its readers to node into[k] (output 0 to output 0,
  // the same ranges: the fusions fold a node into its producer, whose output takes the node's place),
  // renumbers the ids, rebuilds `users` and validates. into[k] < k for a removed node.
  void fold_nodes(const std::vector<int>& into);
};

}  // namespace mk
