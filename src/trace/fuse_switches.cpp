#include "trace/fuse_switches.h"

#include <cstdlib>
#include <stdexcept>

#include "ir/strings.h"

namespace mk {

std::optional<bool> fuse_switch(const std::string& name) {
  const char* env = std::getenv("MEGAKITTENS_FUSE");
  const std::string list = env ? env : "";
  // Every entry is checked whichever switch is asked for, so a bad list fails on every graph alike.
  std::optional<bool> rope, rms;
  for (const std::string& item : split_trimmed(list, ',')) {
    if (item.empty()) continue;
    const bool on = item.rfind("no_", 0) != 0;
    const std::string sw = on ? item : item.substr(3);
    if (sw != "gemm_rope" && sw != "gemm_rms")
      throw std::invalid_argument("megakittens: MEGAKITTENS_FUSE entry '" + item +
                                  "' is not one of gemm_rope, no_gemm_rope, gemm_rms, no_gemm_rms");
    std::optional<bool>& result = sw == "gemm_rope" ? rope : rms;
    if (result && *result != on)
      throw std::invalid_argument("megakittens: MEGAKITTENS_FUSE sets " + sw + " both on and off ('" + list + "')");
    result = on;
  }
  return name == "gemm_rope" ? rope : rms;
}

}  // namespace mk
