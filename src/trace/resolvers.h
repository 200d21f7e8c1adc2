// Op resolution (seed §02 step 3): FX call target -> IType, its tensor inputs and kept outputs.
#pragma once
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
};

// Resolves a call_function/call_method/call_module node. Throws CompileError for an unknown op or
// an argument the IType cannot honour.
Resolution resolve_op(const FxGraph&, const FxNode&);

}  // namespace mk
