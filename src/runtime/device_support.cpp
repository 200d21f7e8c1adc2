#include "runtime/device_support.h"

#include "runtime/codegen.h"
#include "runtime/driver.h"

namespace mk::rt {

std::string missing_device_body(const ITypePtr& itype, const Profile& profile) {
  // Ask the code generator itself (one icode), so this answer never drifts from the JIT's.
  Program p;
  p.name = "device_body_probe";
  p.profile = profile;
  p.icodes = {std::make_shared<Noop>(), itype};
  try {
    (void)generate_source(p);
  } catch (const GpuError& e) {
    return e.what();
  }
  return "";
}

}  // namespace mk::rt
