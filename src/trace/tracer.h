// FX graph -> DAG (seed §02): prune, classify, resolve ops, fold views into ranges, validate.
#pragma once
#include "ir/dag.h"
#include "ir/error.h"  // trace() throws CompileError
#include "ir/fx.h"

namespace mk {

// Throws CompileError naming the FX node, the op, the constraint and the offending value.
// fuse = false skips the fusion passes (the FX-level RMSNorm, RoPE, repeat_kv, residual and SwiGLU
// rewrites and the DAG-level activation fold): each aten op lowers on its own, as in the seed (its
// golden schedule of the MLP is reproduced that way), for bisecting a fusion.
DAG trace(const FxGraph&, bool fuse = true);

// dry_run's support report: every compute node (after the FX-level fusions) whose op cannot be
// resolved to an instruction type, with the reason. Views and getitem are not ops here. When every op
// resolves, the rest of trace() (views, layouts, validation) still runs and its error, if any, is
// reported against the node it names.
struct SupportIssue {
  std::string node, target, reason;
};
std::vector<SupportIssue> support_report(const FxGraph&, bool fuse = true);  // fuse: as trace()'s

// For the fallback partitioner (trace/op_units.h): views and getitem fold into the edges of their
// consumers instead of becoming nodes; the nodes the (last) output node depends on.
bool folds_into_edge(const FxNode&);
std::vector<bool> live_from_output(const FxGraph&);

}  // namespace mk
