// FX graph -> DAG (seed §02): prune, classify, resolve ops, fold views into ranges, validate.
#pragma once
#include "ir/dag.h"
#include "ir/error.h"  // trace() throws CompileError
#include "ir/fx.h"

namespace mk {

// Throws CompileError naming the FX node, the op, the constraint and the offending value.
DAG trace(const FxGraph&);

}  // namespace mk
