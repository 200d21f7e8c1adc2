// DAG-level fusion of a rotate_half Rope into the epilogue of the Gemm that produces its x (issue 6: HF
// Llama's q and k projections): the Gemm's `rope` flag rotates each head's columns in fp32 before the one
// rounding, so the Rope's pass over q / k and its place on the layer's critical path go away, and
// attention reads q / k straight from the projection's (B, S, H, D) output. Runs on the traced DAG,
// after op resolution. By default at head dim 64 only, where it measured faster (H200, same call: HF 1B
// kernel 5.234 ms with it, 5.349 without; the 8B at D 128 6.907 vs 6.711: kernels/mk/itypes/gemm.cuh
// [Note: gemm rope epilogue]); MEGAKITTENS_FUSE=gemm_rope folds every head dim, =no_gemm_rope none.
#pragma once
#include "ir/dag.h"

namespace mk {

// Rewrites `dag` in place (node ids renumbered): each Rope (rotate_half, full tables) whose
//  - x is the whole 2-D (M, N) output of a Gemm (no swiglu, act, bias_full or rope yet) that nothing else
//    reads, seen as (B, H, S, D) = view(B, S, H, D).transpose(1, 2) (HF) or as view(B, S, H, D), with
//    M = B S, N = H D and D 64 or 128;
//  - cos / sin are bf16 tables of one whole tensor each, read as row s (or row b S + s) of D, broadcast
//    over the heads (and the batch), produced before the Gemm;
//  - output is read only by Attention nodes as q, k or v, whole (any permutation of its dims),
// becomes that Gemm with flags.rope = D and the tables as two more inputs; the Attention nodes read the
// Gemm's output through the Rope's x view (their bshd flags follow). Returns the number of fusions.
int fuse_gemm_rope(DAG& dag);

}  // namespace mk
