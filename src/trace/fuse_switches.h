// MEGAKITTENS_FUSE: fusion switches for A/B runs (README "Environment"), a comma list of
// gemm_rope / no_gemm_rope (trace/fuse_gemm_rope.h) and rms_in / no_rms_in (trace/fuse_rms_norm_gemm.h).
#pragma once
#include <optional>
#include <string>

namespace mk {

// The setting of switch `name` ("gemm_rope", "rms_in"): true when listed, false when listed as
// "no_<name>", nullopt when absent (the pass's default). Throws std::invalid_argument (Python ValueError)
// naming an entry that is not one of the switches, or a switch given both ways.
std::optional<bool> fuse_switch(const std::string& name);

}  // namespace mk
