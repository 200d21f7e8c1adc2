#include "trace/fuse_switches.h"

#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "ir/strings.h"

namespace mk {

std::optional<bool> fuse_switch(const std::string& name) {
  static const char* const kSwitches[] = {"gemm_rope", "rms_in"};
  const char* env = std::getenv("MEGAKITTENS_FUSE");
  const std::string list = env ? env : "";
  // Every entry is checked whichever switch is asked for, so a bad list fails on every graph alike.
  std::optional<bool> result[std::size(kSwitches)];
  for (const std::string& item : split_trimmed(list, ',')) {
    if (item.empty()) continue;
    const bool on = item.rfind("no_", 0) != 0;
    const std::string sw = on ? item : item.substr(3);
    size_t k = 0;
    while (k < std::size(kSwitches) && sw != kSwitches[k]) ++k;
    if (k == std::size(kSwitches))
      throw std::invalid_argument("megakittens: MEGAKITTENS_FUSE entry '" + item +
                                  "' is not one of gemm_rope, rms_in (each may take a no_ prefix)");
    if (result[k] && *result[k] != on)
      throw std::invalid_argument("megakittens: MEGAKITTENS_FUSE sets " + sw + " both on and off ('" + list + "')");
    result[k] = on;
  }
  for (size_t k = 0; k < std::size(kSwitches); ++k)
    if (name == kSwitches[k]) return result[k];
  throw std::logic_error("megakittens: fuse_switch asked for unknown switch '" + name + "'");
}

}  // namespace mk
