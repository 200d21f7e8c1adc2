// The fallback partitioner's question (issue 6, fallback="eager"): could this op be compiled if the graph
// were cut around it? Each op becomes a small graph of its own, built exactly as it would appear inside a
// partition: its view chains (folded by the tracer into its input edges) kept, every producer a graph
// input, its used outputs the graph outputs. The front end traces and schedules each one with the real
// compiler, so support is never a hand-kept list.
#pragma once
#include <utility>
#include <vector>

#include "ir/fx.h"

namespace mk {

struct OpUnits {
  static constexpr int kFolded = -1;  // a view or getitem: the tracer folds it into its consumer's edge
  static constexpr int kNotOp = -2;   // placeholder, get_attr, output, or a node the output does not need
  // Per FX node: k when node k is an op with a unit graph of its own (`graphs`); j when an FX-level
  // fusion (trace/fuse_rms_norm.h) folded node k into op j, so k compiles exactly when j does; else
  // kFolded or kNotOp.
  std::vector<int> owner;
  std::vector<std::pair<int, FxGraph>> graphs;  // (FX node index, its unit graph), in FX order
};

// Unit graph inputs are contiguous (the tracer reads every producer as contiguous; the dispatcher
// passes a contiguous copy of a strided argument). Throws CompileError for a malformed graph.
OpUnits op_units(const FxGraph&);

}  // namespace mk
