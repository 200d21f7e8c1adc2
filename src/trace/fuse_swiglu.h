// FX-level fusion of a SwiGLU MLP's gate and up projections (issue 6, "fuse SiLU-mul into the up/gate
// GEMM"): silu(x @ Wg) * (x @ Wu) becomes one Gemm(swiglu) whose tiles hold the gate and up columns side
// by side and write only the product, so neither projection nor silu(gate) is ever stored and the two
// elementwise passes go away. Runs with the other FX-level fusions, before op resolution.
#pragma once
#include "ir/fx.h"

namespace mk {

// Rewrites, in place, each match of
//   y = mul.Tensor(silu(g), u) (either order), g = R(mm(xg, bg)), u = R(mm(xu, bu)),
// where R is the same view | _unsafe_view | reshape on both sides or absent on both, xg and xu are one
// node or the same reshape of one node, every product is bfloat16 and of one shape, and the mms, the
// reshapes and the silu have no other user, into
//   m = megakittens.gemm_swiglu(x, bg, bu) at the later mm's place, y = view(m, y's shape).
// Returns the number of fusions.
int fuse_swiglu(FxGraph&);

}  // namespace mk
