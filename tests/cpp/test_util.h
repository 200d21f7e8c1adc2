// Small helpers shared by the C++ tests.
#pragma once
#include <functional>
#include <string>

#include "ir/error.h"

namespace mk::test {

// The message of the CompileError `f` throws, or "<no CompileError>".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CompileError& e) {
    return e.what();
  }
  return "<no CompileError>";
}

}  // namespace mk::test
