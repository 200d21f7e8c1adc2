// The generated part of the megakernel source (DESIGN §6 "JIT"): the cluster size, the number of
// tensor slots, one type per icode (IType + static parameters) and the icode switch. Everything
// else lives in kernels/ and is #included.
#pragma once
#include <string>
#include <vector>

#include "schedule/program.h"

namespace mk::rt {

// Throws GpuError when an icode's IType has no device body yet.
std::string generate_source(const Program&);

// Per slot: its index among the 64x64 128B-swizzled tile maps (kernels/mk/vm.cuh `xmaps`), -1 when no
// instruction needs one (today: the A, B and D slots of every Gemm node). The generated source's
// MK_NUM_XMAPS is max(1, number of such slots); src/runtime/launch.cpp encodes the maps.
std::vector<int> xmap_index(const Program&);
int num_xmaps(const Program&);

}  // namespace mk::rt
