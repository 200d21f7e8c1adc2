// The generated part of the megakernel source (DESIGN §6 "JIT"): the cluster size, the number of
// tensor slots, one type per icode (IType + static parameters) and the icode switch. Everything
// else lives in kernels/ and is #included.
#pragma once
#include <string>

#include "schedule/program.h"

namespace mk::rt {

// Throws GpuError when an icode's IType has no device body yet.
std::string generate_source(const Program&);

}  // namespace mk::rt
