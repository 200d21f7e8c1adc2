// FX-level fusion of a residual add into the Gemm that produces its other operand (issue 6, "fold the
// residual add into GEMM epilogues"): h + linear(x, W) becomes one Gemm with a full bias (fp32 add before
// the one rounding), so the add's pass over h and its place on the layer's critical path go away.
// Runs with the other FX-level fusions, before op resolution.
#pragma once
#include "ir/fx.h"

namespace mk {

// Rewrites, in place, each match of
//   a = add.Tensor(r, v) (either order, no alpha), v = view | _unsafe_view | reshape (m, S), or v = m (2-D),
//   m = mm(x, w): shape (M, N), S = (..., N) with M rows, r of shape S and m's dtype, contiguous
// into
//   m = addmm(r', x, w) and a = v's reshape of m (a view of m when v = m),
// where r' is r, or view(r, [M, N]) inserted right before m. When r comes after m (the seed MLP's b[i]),
// r must be a select / slice / reshape of a node before m, and a copy of it goes right before m too.
// m and v must have no other user. Returns the number of fusions.
int fuse_residual_add(FxGraph&);

}  // namespace mk
