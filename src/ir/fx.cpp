#include "ir/fx.h"

#include "ir/strings.h"

namespace mk {

std::string FxArg::str() const {
  StrBuf os;
  switch (kind) {
    case Kind::None: os << "None"; break;
    case Kind::Node: os << "%" << i; break;
    case Kind::Int: os << i; break;
    case Kind::Float: os << f; break;
    case Kind::Bool: os << (i ? "True" : "False"); break;
    case Kind::Str: os << "'" << s << "'"; break;
    case Kind::List:
      os << "[";
      for (size_t k = 0; k < items.size(); ++k) os << (k ? ", " : "") << items[k].str();
      os << "]";
      break;
  }
  return os.str();
}

bool FxTensor::contiguous() const {
  int64_t expect = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && stride[k] != expect) return false;
    expect *= shape[k];
  }
  return true;
}

const FxArg* FxNode::kwarg(const std::string& key) const {
  for (const auto& [k, v] : kwargs)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace mk
