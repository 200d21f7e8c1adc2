// The generated part of the megakernel source (DESIGN §6 "JIT"): the cluster size, the number of
// tensor slots, one type per icode (IType + static parameters) and the icode switch. Everything
// else lives in kernels/ and is #included.
#pragma once
#include <cstddef>
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
// Attention operand stored as (B, S, H, D) (kernels/mk/itypes/attention.cuh). wide[s]: a Gemm loads the
// slot (A, B, B2), and the four maps after those hold the same memory in 16 / 32 KB boxes (kernels/mk/
// itypes/gemm.cuh [Note: gemm wide boxes]): box 64 x 128 rows, a 5-D split (c % 64, r, c / 64, d, b)
// with box 64 x 64 rows x 2 column blocks, the same with 4 blocks, and box 64 x 256 rows. The generated
// source's MK_NUM_XMAPS is max(1, count); src/runtime/launch.cpp encodes the maps.
struct XmapPlan {
  std::vector<int> index;
  std::vector<bool> strided;
  std::vector<bool> wide;
  int count = 0;
};
XmapPlan xmap_plan(const Program&);

// Byte layout of the kernel parameter mk::Globals (kernels/mk/vm.cuh [Note: tile maps]): Common, then per
// slot a 128 B tile map and a 32 B SlotDesc, then the xmaps 64-byte aligned; when that exceeds the
// 32,764-byte parameter limit the maps move to a device buffer (maps_in_global) and the parameter keeps
// Common and the SlotDescs. The generated source's MK_MAPS_IN_GLOBAL mirrors maps_in_global.
struct ParamLayout {
  static constexpr size_t kCommonBytes = 128, kMapBytes = 128, kSlotBytes = 32, kMaxParamBytes = 32764;
  size_t nslots = 1, nxmaps = 1;
  bool maps_in_global = false;
  size_t slots_offset() const { return kCommonBytes + (maps_in_global ? 0 : nslots * kMapBytes); }
  size_t xmaps_offset() const { return (kCommonBytes + nslots * (kMapBytes + kSlotBytes) + 63) / 64 * 64; }
  size_t param_bytes() const { return maps_in_global ? slots_offset() + nslots * kSlotBytes : xmaps_offset() + nxmaps * kMapBytes; }
  size_t global_map_bytes() const { return maps_in_global ? (nslots + nxmaps) * kMapBytes : 0; }
};
ParamLayout param_layout(const Program&);

}  // namespace mk::rt
