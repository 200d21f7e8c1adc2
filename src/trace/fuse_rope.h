// FX-level fusion of the rotate-half RoPE (issue 6): the slices, neg, cat, broadcast muls, add and casts
// that examples/llama.py's apply_rotary_emb and Hugging Face's apply_rotary_pos_emb leave in the aten
// graph (~17k tiny instructions per Llama-1B layer) become one megakittens.rope node. Runs where
// fuse_decomposed_rms_norm runs, before op resolution.
#pragma once
#include "ir/fx.h"

namespace mk {

// Rewrites, in place, each match of
//   r = add(mul(X, C), mul(cat([neg(slice(X, -1, h, E)), slice(X, -1, 0, h)], -1), S))
// (either operand order of the add and of each mul; h = D/2 for X's last dim D; E >= D, e.g. the
// INT64_MAX sentinel), or of the interleaved form (GPT-J's and Cohere's rotate_every_two)
//   r = add(mul(X, C), mul(view(stack([neg(X[..., 1::2]), X[..., ::2]], -1), X's shape), S))
// into
//   y = megakittens.rope(x, C, S) (megakittens.rope_interleaved for the second form), where
//   X = _to_copy(x, dtype=float32) and y = _to_copy(r, dtype=x.dtype)   (x.float() ... .type_as(x)), or
//   x = X and y = r, when r has X's dtype (no casts, or the casts have other users).
// C and S (often unsqueezed views of the cos/sin tables) stay the node's operands; they must have one
// shape that broadcasts to X's with last dim D, and r must have X's shape. Only when every intermediate
// has no other user; they are left dead for the tracer's pruning. Returns the number of fusions.
int fuse_rope(FxGraph&);

}  // namespace mk
