// FX-level fusion run before op resolution (issue 6): the decomposed RMSNorm that F.rms_norm (CPU
// builds of torch) and Hugging Face's LlamaRMSNorm leave in the aten graph becomes one
// megakittens.rms_norm node. Its fp32 intermediates have no instruction type, so this must happen
// before resolution, not as a DAG pass.
#pragma once
#include "ir/fx.h"

namespace mk {

// Rewrites, in place, each match of
//   h = _to_copy(x, dtype=float32); v = mean.dim(pow.Tensor_Scalar(h, 2) | mul(h, h), [-1], keepdim=True)
//   m = mul(h, rsqrt(add(v, eps)))
// followed by   y = mul(w, _to_copy(m, dtype=x.dtype))      (LlamaRMSNorm)
//          or   y = _to_copy(mul(m, w), dtype=x.dtype)      (F.rms_norm)
//          or   y = _to_copy(m, dtype=x.dtype)              (no weight)
// into y = megakittens.rms_norm(x, w | None, eps). Only when every intermediate has no other user; the
// intermediates are left dead for the tracer's pruning. Returns the number of fusions.
int fuse_decomposed_rms_norm(FxGraph&);

}  // namespace mk
