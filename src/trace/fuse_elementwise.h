// DAG-level fusion of connected elementwise nodes (issue 3's chain of 20 ops): ElementwiseUnary and
// ElementwiseBinary nodes whose intermediate values nothing else reads become one ElementwiseFused node
// (src/itypes/elementwise_fused.h), so the group reads its outer inputs once, writes only its result, and
// costs one dependent step instead of one per op. Runs on the traced DAG, after the other fusions (a Gemm
// takes its activation first).
#pragma once
#include "ir/dag.h"

namespace mk {

// Grows a group backwards from each elementwise node not yet taken, latest first: a producer joins when
// it is an ElementwiseUnary or a not-in-place ElementwiseBinary of the root's shape and every reader of
// its output is in the group and reads all of it, unpermuted and unreshaped. Then the earliest members
// leave (their values become outer inputs) until the group reads at most ElementwiseFused::kMaxInputs
// distinct outer views in at most kMaxSteps steps; they may root groups of their own. Rewrites `dag` in
// place (the root keeps its place and name; node ids renumbered); returns the number of groups.
int fuse_elementwise(DAG& dag);

}  // namespace mk
