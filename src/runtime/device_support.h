// Which instruction types the megakernel can run (issue 6, fallback="eager"): the front end runs an op
// whose IType has no device body (kernels/mk/itypes/) eagerly instead of sending its whole graph to
// the CPU reference interpreter.
#pragma once
#include <string>

#include "itypes/itype.h"
#include "itypes/profile.h"

namespace mk::rt {

// "" when `itype` (with its static parameters) has a device body for `profile`'s tiles, else why not:
// the GpuError message that generating the megakernel source would raise.
std::string missing_device_body(const ITypePtr& itype, const Profile& profile);

}  // namespace mk::rt
