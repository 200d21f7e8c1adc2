// DAG-level fusion of an activation into the Gemm epilogue (issue 4's MLP, nn.Linear + ReLU / GELU /
// SiLU): an ElementwiseUnary of one op without a constant, reading the whole output of a Gemm that
// nothing else reads, becomes the Gemm's `act` flag (applied in fp32 after the bias, before the one
// rounding: kernels/mk/itypes/gemm.cuh), and its readers read the Gemm. One dependent step (a pass over
// the output and a wave of instructions) less per layer. Runs on the traced DAG, after op resolution.
#pragma once
#include "ir/dag.h"

namespace mk {

// Rewrites `dag` in place (node ids renumbered); returns the number of fusions.
int fuse_gemm_act(DAG& dag);

}  // namespace mk
