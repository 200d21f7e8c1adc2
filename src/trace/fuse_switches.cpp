#include "trace/fuse_switches.h"

#include <cstdlib>
#include <stdexcept>

#include "ir/strings.h"

namespace mk {

std::optional<bool> fuse_switch(const std::string& name) {
  const char* env = std::getenv("MEGAKITTENS_FUSE");
  const std::string list = env ? env : "";
  std::optional<bool> result;
  for (const std::string& item : split_trimmed(list, ',')) {
    if (item.empty()) continue;
    const bool on = item.rfind("no_", 0) != 0;
    const std::string sw = on ? item : item.substr(3);
    if (sw != "gemm_rope" && sw != "gemm_rms")
      throw std::invalid_argument("megakittens: MEGAKITTENS_FUSE entry '" + item +
                                  "' is not one of gemm_rope, no_gemm_rope, gemm_rms, no_gemm_rms");
    if (sw != name) continue;
    if (result && *result != on)
      throw std::invalid_argument("megakittens: MEGAKITTENS_FUSE sets " + name + " both on and off ('" + list + "')");
    result = on;
  }
  return result;
}

}  // namespace mk
