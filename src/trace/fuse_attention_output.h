// DAG-level fusion: models transpose SDPA's (B, H, S, D) output back to (B, S, H, D) and reshape it to
// (B, S, H * D) for the output projection; that transpose is a Copy node (docs/ir.md [Note: view copies]),
// a pass over the output and a dependent step per layer. When a Copy of exactly that transpose is the
// Attention's only reader, the Attention stores its output as (B, S, H, D) itself (flag bshd=o:
// kernels/mk/itypes/attention.cuh), and the Copy goes. Runs on the traced DAG, after op resolution.
#pragma once
#include "ir/dag.h"

namespace mk {

// Rewrites `dag` in place (node ids renumbered); returns the number of fusions.
int fuse_attention_output(DAG& dag);

}  // namespace mk
