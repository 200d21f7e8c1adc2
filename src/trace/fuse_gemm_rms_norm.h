// DAG-level fold of an RMSNorm that sits between two Gemms (issue 6: an HF Llama layer's two norms, after
// the o and down projections' residual adds, before q / k / v and gate / up) into both: the Gemm that
// writes the norm's x also writes x * w and the rows' sums of squares (`rms_out`), and each Gemm reading
// the norm's output reads x * w instead and scales its accumulator rows by rsqrt(mean(x^2) + eps)
// (`rms_scale`). y @ W = (r * x * w) @ W = r * ((x * w) @ W): the norm's own instruction phase, one
// load-compute-store latency on a layer's critical path, twice a layer, goes away. Numerics: eager rounds
// x * r to bf16 before the weight; here x * w is rounded and r applied in fp32 (one rounding of a
// different product; kernels/mk/itypes/gemm.cuh [Note: gemm rms fold]). Off unless MEGAKITTENS_FUSE=gemm_rms:
// the epilogue work it adds (reading ss and w, writing hw) cost more than the norm's phase it saves
// (benchmarks/notes.md Session 26).
#pragma once
#include "ir/dag.h"

namespace mk {

// Rewrites `dag` in place (node ids renumbered): each RMSNorm with a weight whose
//  - x is the whole, contiguous 2-D (M, N) bf16 output of a Gemm without swiglu, rope, rms_out or
//    rms_scale, N a multiple of 64, seen with N as its last dim;
//  - weight is a whole bf16 (N,) graph input;
//  - output is read only as A by Gemms without ta, rms_scale or rms_out, each viewing it whole as (M, N),
// becomes flags on those Gemms (see above). Returns the number of norms folded.
int fuse_gemm_rms_norm(DAG& dag);

}  // namespace mk
