#include "itypes/itype.h"

#include <cctype>

#include "ir/error.h"

namespace mk {

std::string IType::str() const {
  const std::string p = params();
  return p.empty() ? name() : name() + "(" + p + ")";
}

std::string IType::op_name() const {
  const std::string n = name();
  std::string out;
  auto upper = [&](size_t k) { return k < n.size() && std::isupper(static_cast<unsigned char>(n[k])); };
  for (size_t k = 0; k < n.size(); ++k) {
    const char c = n[k];
    if (upper(k)) {
      // A word starts at an upper-case letter after a lower-case one, or at the last capital of an
      // acronym: "RMSNorm" -> "rms_norm", "ElementwiseUnary" -> "elementwise_unary".
      if (k && (!upper(k - 1) || (k + 1 < n.size() && !upper(k + 1)))) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

void require_rank(const NodeInfo& n, const char* what, const std::vector<int64_t>& shape, int lo, int hi) {
  const int r = static_cast<int>(shape.size());
  if (r < lo || r > hi)
    fail("node '", n.name, "' (", n.target, "): ", what, " must have rank ", lo, "..", hi, ", got rank ", r);
}

void require_dtype(const NodeInfo& n, const char* what, DType got, DType want) {
  if (got != want)
    fail("node '", n.name, "' (", n.target, "): ", what, " must be ", dtype_name(want), ", got ", dtype_name(got));
}

void require_inputs(const NodeInfo& n, size_t k) {
  if (n.inputs.size() != k)
    fail("node '", n.name, "' (", n.target, "): expects ", k, " tensor inputs, got ", n.inputs.size());
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace mk
