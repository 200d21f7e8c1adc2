// Error types raised by the core; the bindings map each to a Python exception of the same name.
#pragma once
#include "ir/strings.h"
#include <stdexcept>
#include <string>

namespace mk {

// A graph or option the compiler cannot handle: unsupported op, violated constraint, bad input.
// Messages name the FX node, the op, the constraint and the offending value.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The reference interpreter found work left that no SM can start (a barrier that is never reached).
struct DeadlockError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The reference interpreter saw a read of data that its producer had not written yet.
struct RaceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Builds a message from streamable parts: fail<CompileError>("node ", name, ": ...").
template <class E = CompileError, class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  StrBuf os;
  (os << ... << parts);
  throw E(os.str());
}

}  // namespace mk
