// Op resolution (seed §02 step 3): FX call target -> IType, its tensor inputs and kept outputs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/fx.h"
#include "itypes/itype.h"

namespace mk {

struct Resolution {
  ITypePtr itype;
  std::string target;                // the op (auto_functionalized_v2 unwrapped to the mutating op)
  std::vector<const FxArg*> inputs;  // tensor arguments, in IType input order
  std::vector<int> kept{0};          // FX output indices the DAG node computes, in DAG output order
  // Optional: the IType for the folded input views (in `inputs` order), once the tracer knows them -
  // static parameters that depend on an operand's layout (Gemm's transpose flags). Replaces `itype`.
  std::function<ITypePtr(const std::vector<TensorRange>&)> bind = nullptr;
};

// Resolves a call_function/call_method/call_module node. Throws CompileError for an unknown op or
// an argument the IType cannot honour.
Resolution resolve_op(const FxGraph&, const FxNode&);

}  // namespace mk
