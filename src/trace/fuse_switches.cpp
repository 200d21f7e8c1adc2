#include "trace/fuse_switches.h"

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace mk {

std::optional<bool> fuse_switch(const std::string& name) {
  static const std::vector<std::string> kSwitches = {"gemm_rope", "gemm_rms"};
  const char* env = std::getenv("MEGAKITTENS_FUSE");
  const std::string list = env ? env : "";
  std::optional<bool> result;
  for (size_t a = 0; a <= list.size();) {
    size_t b = list.find(',', a);
    if (b == std::string::npos) b = list.size();
    std::string item = list.substr(a, b - a);
    a = b + 1;
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    const bool on = item.rfind("no_", 0) != 0;
    const std::string sw = on ? item : item.substr(3);
    bool known = false;
    for (const std::string& k : kSwitches) known = known || sw == k;
    if (!known)
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
