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

// The 64x64 128B-swizzled bf16 tile maps (kernels/mk/vm.cuh `xmaps`) of the slots that the wgmma
// ITypes TMA (Gemm: A, B, D; Attention: q, k, v, o). index[s]: the slot's first map, -1 none: the map
// of its own (padded) shape, box 64 columns x 64 rows. strided[s]: xmaps[index + 1] is a second map of
// the same memory with box 64 x 1 x 64 over dims (c, r, d) - 64 rows of dim d at one r - for an
// Attention operand stored as (B, S, H, D) (kernels/mk/itypes/attention.cuh). The generated source's
// MK_NUM_XMAPS is max(1, count); src/runtime/launch.cpp encodes the maps.
struct XmapPlan {
  std::vector<int> index;
  std::vector<bool> strided;
  int count = 0;
};
XmapPlan xmap_plan(const Program&);

}  // namespace mk::rt
