#include "trace/op_call.h"

#include "ir/strings.h"

namespace mk {

namespace {
constexpr const char* kAutoFunc = "auto_functionalized_v2";

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
}  // namespace

OpCall::OpCall(const FxGraph& g, const FxNode& n, std::string target, const std::string& schema)
    : graph_(&g), node_(&n), target_(std::move(target)), functionalized_(n.target == kAutoFunc) {
  size_t positional = 0;
  bool kw_only = false;
  for (const std::string& tok : split_trimmed(schema, ',')) {
    if (tok.empty()) continue;
    if (tok == "*") {
      kw_only = true;
      continue;
    }
    names_.push_back(tok);
    if (!kw_only) ++positional;
  }
  values_.assign(names_.size(), nullptr);
  base_index_.assign(names_.size(), -1);

  if (!functionalized_) {
    if (n.args.size() > positional)
      fail("takes at most ", positional, " positional arguments (", schema, "), got ", n.args.size());
    for (size_t k = 0; k < n.args.size(); ++k) values_[k] = &n.args[k];
    for (const auto& [key, v] : n.kwargs) {
      const int s = slot(key);
      if (s < 0) fail("unexpected keyword argument '", key, "' = ", v.str(), " (schema: ", schema, ")");
      values_[s] = &v;
    }
    return;
  }

  // auto_functionalized_v2(op, **kwargs): args[0] is the op, every real argument is a keyword; a
  // mutated tensor argument `a` arrives as `_a_base_index` into `_all_bases`.
  if (n.args.size() != 1) fail("expected the mutating op as the only positional argument, got ", n.args.size());
  const FxArg* bases = n.kwarg("_all_bases");
  if (!bases || bases->kind != FxArg::Kind::List) fail("missing the list argument '_all_bases'");
  for (const auto& [key, v] : n.kwargs) {
    if (key == "_all_bases") continue;
    if (const int s = slot(key); s >= 0) {
      values_[s] = &v;
      continue;
    }
    bool matched = false;
    for (size_t s = 0; s < names_.size() && !matched; ++s) {
      const std::string prefix = "_" + names_[s] + "_";
      if (!starts_with(key, prefix)) continue;
      matched = true;
      if (key != prefix + "base_index")
        fail("mutated argument '", names_[s], "' is a view of its base ('", key, "' = ", v.str(),
             "): in-place ops on views are not supported");
      if (v.kind == FxArg::Kind::None) {
        values_[s] = &v;  // an optional mutated tensor passed as None
      } else if (v.kind != FxArg::Kind::Int || v.i < 0 || v.i >= static_cast<int64_t>(bases->items.size())) {
        fail("'", key, "' must index '_all_bases' (", bases->items.size(), " entries), got ", v.str());
      } else {
        values_[s] = &bases->items[v.i];
        base_index_[s] = static_cast<int>(v.i);
      }
    }
    if (!matched) fail("unexpected keyword argument '", key, "' = ", v.str(), " (schema: ", schema, ")");
  }
}

std::string OpCall::where() const {
  StrBuf os;
  os << "node '" << node_->name << "' (";
  if (functionalized_) os << kAutoFunc << "(" << target_ << "))";
  else os << target_ << ")";
  return os.str();
}

int OpCall::slot(const std::string& name) const {
  for (size_t s = 0; s < names_.size(); ++s)
    if (names_[s] == name) return static_cast<int>(s);
  return -1;
}

const FxArg* OpCall::get(const std::string& name) const {
  const int s = slot(name);
  if (s < 0) fail("internal: '", name, "' is not in the schema");
  return values_[s];
}

bool OpCall::is_none(const std::string& name) const {
  const FxArg* a = get(name);
  return !a || a->kind == FxArg::Kind::None;
}

const FxArg& OpCall::required(const std::string& name, const char* what) const {
  const FxArg* a = get(name);
  if (!a) fail("missing required argument '", name, "' (", what, ")");
  return *a;
}

const FxArg& OpCall::tensor(const std::string& name) const {
  const FxArg& a = required(name, "a tensor");
  if (a.kind == FxArg::Kind::Int || a.kind == FxArg::Kind::Float || a.kind == FxArg::Kind::Bool)
    fail("argument '", name, "' is the scalar ", a.str(), ": scalar operands are not supported yet");
  if (!a.is_node()) fail("argument '", name, "' must be a tensor, got ", a.str());
  return a;
}

std::optional<double> OpCall::scalar_operand(const std::string& name) const {
  const FxArg& a = required(name, "a tensor or a number");
  if (a.kind == FxArg::Kind::Float) return a.f;
  if (a.kind == FxArg::Kind::Int) return static_cast<double>(a.i);
  if (a.kind == FxArg::Kind::Bool) fail("argument '", name, "' is the bool ", a.str(), ": bool scalar operands are not supported");
  if (!a.is_node()) fail("argument '", name, "' must be a tensor or a number, got ", a.str());
  return std::nullopt;
}

const FxArg* OpCall::opt_tensor(const std::string& name) const {
  return is_none(name) ? nullptr : &tensor(name);
}

const FxTensor& OpCall::meta(const FxArg& t) const {
  const FxNode& p = graph_->nodes.at(t.i);
  if (p.multi_output || p.outputs.size() != 1 || !p.outputs[0])
    fail("argument node '", p.name, "' (", p.target, ") is not a single tensor");
  return *p.outputs[0];
}

double OpCall::f64(const std::string& name, std::optional<double> dflt) const {
  const FxArg* a = get(name);
  if (!a && dflt) return *dflt;
  if (!a) fail("missing required argument '", name, "' (a float)");
  if (a->kind == FxArg::Kind::Float) return a->f;
  if (a->kind == FxArg::Kind::Int) return static_cast<double>(a->i);
  fail("argument '", name, "' must be a number, got ", a->str());
}

std::optional<double> OpCall::opt_f64(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return f64(name);
}

int64_t OpCall::i64(const std::string& name, std::optional<int64_t> dflt) const {
  const FxArg* a = get(name);
  if (!a && dflt) return *dflt;
  if (!a) fail("missing required argument '", name, "' (an int)");
  if (a->kind != FxArg::Kind::Int) fail("argument '", name, "' must be an int, got ", a->str());
  return a->i;
}

bool OpCall::flag(const std::string& name, std::optional<bool> dflt) const {
  const FxArg* a = get(name);
  if (!a && dflt) return *dflt;
  if (!a) fail("missing required argument '", name, "' (a bool)");
  if (a->kind != FxArg::Kind::Bool) fail("argument '", name, "' must be a bool, got ", a->str());
  return a->i != 0;
}

std::string OpCall::str(const std::string& name, std::optional<std::string> dflt) const {
  const FxArg* a = get(name);
  if (!a && dflt) return *dflt;
  if (!a) fail("missing required argument '", name, "' (a string)");
  if (a->kind != FxArg::Kind::Str) fail("argument '", name, "' must be a string, got ", a->str());
  return a->s;
}

std::vector<int64_t> OpCall::ints(const std::string& name) const {
  const FxArg& a = required(name, "a list of ints");
  if (a.kind == FxArg::Kind::Int) return {a.i};
  if (a.kind != FxArg::Kind::List) fail("argument '", name, "' must be a list of ints, got ", a.str());
  std::vector<int64_t> out;
  for (const FxArg& it : a.items) {
    if (it.kind != FxArg::Kind::Int) fail("argument '", name, "' must be a list of ints, got ", a.str());
    out.push_back(it.i);
  }
  return out;
}

int OpCall::base_index(const std::string& name) const {
  const int s = slot(name);
  if (!functionalized_)
    fail("in-place op must arrive functionalized (wrapped in auto_functionalized_v2), not called directly");
  if (s < 0 || base_index_[s] < 0) fail("mutated argument '", name, "' has no '_", name, "_base_index'");
  return base_index_[s];
}

}  // namespace mk
