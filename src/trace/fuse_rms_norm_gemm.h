// DAG-level fold of an RMSNorm into the Gemms that read its output (issue 6: an HF Llama layer's two norms,
// before q / k / v and gate / up): each reader takes the norm's input x as its A and the norm's weight w as
// one more input (Gemm flag `rms_in`), computes its rows' mean of x^2 from the A tiles it loads anyway,
// multiplies them by w on the way into the tensor cores and scales its accumulator rows by
// rsqrt(mean + eps): y @ B = (r * x * w) @ B = r * ((x * w) @ B). The norm's own instruction phase, one
// load-compute-store latency on a layer's critical path, goes away, and nothing is written in its place.
// Numerics: eager rounds x * r to bf16 before the weight; here x * w is rounded and r applied in fp32 (one
// rounding of a different product; kernels/mk/itypes/gemm.cuh [Note: gemm rms_in]). It replaces Session 26's fold
// into the producer's epilogue (rms_out / rms_scale, measured no faster: benchmarks/notes.md Sessions 26, 44).
#pragma once
#include "ir/dag.h"

namespace mk {

// Rewrites `dag` in place (node ids renumbered): each bf16 RMSNorm with a weight whose
//  - x is read whole (its producer's whole output as it is), 2-D after the readers' views, K % 8 == 0;
//  - weight is a whole bf16 (K,) graph input;
//  - output has x's shape and is read only as A by bf16 Gemms without ta or rms flags, each viewing it whole
//    as (M, K),
// becomes the flag rms_in=<eps> on those Gemms, which read x through their old view. Only under
// MEGAKITTENS_FUSE=rms_in (correct, measured 10% slower on the HF 1B: the mainloop's extra work costs more than
// the norm phases it removes). Returns the number of norms folded.
int fuse_rms_norm_gemm(DAG& dag);

}  // namespace mk
