// FX-level rewrite run before op resolution: GQA's repeat_kv in front of SDPA is dropped, because
// the Attention IType reads KV head h / (H / Hk) itself. The repeat is rank 5, which no tensor here
// can be, so it must go before the tracer sees it.
#pragma once
#include "ir/fx.h"

namespace mk {

// Matches, for x of shape (B, Hk, S, D),
//   r = view | _unsafe_view | reshape (clone(expand(unsqueeze(x, 2), [B, Hk, n, S, D])), [B, Hk * n, S, D])
// (Hugging Face's repeat_kv, and what repeat_interleave(n, dim=1) decomposes to; without the clone when
// Hk = 1, where the expanded tensor is viewable as it is) and makes every SDPA
// node that reads r as its key or value (args 1, 2) read x instead. The SDPA result is the same: the
// n copies of KV head k are query heads k*n .. k*n + n - 1. Other users keep r. Returns the number
// of rewritten arguments.
int fuse_repeat_kv(FxGraph&);

}  // namespace mk
