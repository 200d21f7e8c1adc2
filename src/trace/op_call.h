// One FX call bound to its op schema, so resolvers read arguments by name whether FX passed them
// positionally, as keywords or (auto_functionalized_v2) through `_all_bases`. Every argument FX
// passed must be bound to a schema name: nothing is silently ignored.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/fx.h"

namespace mk {

class OpCall {
 public:
  // `schema`: parameter names, "*" separates keyword-only ones: "self, other, *, alpha".
  // Throws CompileError for extra positional arguments or unknown keywords.
  OpCall(const FxGraph&, const FxNode&, std::string target, const std::string& schema);

  const FxGraph& graph() const { return *graph_; }
  const FxNode& node() const { return *node_; }
  const std::string& target() const { return target_; }
  // "node 'mm' (aten.mm.default)" or "node 'x' (auto_functionalized_v2(megakittens...))".
  std::string where() const;

  const FxArg* get(const std::string& name) const;  // nullptr: not passed (the default applies)
  bool is_none(const std::string& name) const;      // absent or None
  const FxArg& tensor(const std::string& name) const;      // a node reference, else CompileError
  const FxArg* opt_tensor(const std::string& name) const;  // nullptr for absent/None
  // A Python number operand (int or float) where a tensor may also stand: its value, or nullopt when
  // the argument is a tensor. CompileError for a bool or anything else.
  std::optional<double> scalar_operand(const std::string& name) const;
  const FxTensor& meta(const FxArg& tensor) const;         // meta["val"] of a single-tensor arg
  double f64(const std::string& name, std::optional<double> dflt = std::nullopt) const;
  std::optional<double> opt_f64(const std::string& name) const;  // nullopt for absent/None
  int64_t i64(const std::string& name, std::optional<int64_t> dflt = std::nullopt) const;
  bool flag(const std::string& name, std::optional<bool> dflt = std::nullopt) const;
  std::string str(const std::string& name, std::optional<std::string> dflt = std::nullopt) const;
  std::vector<int64_t> ints(const std::string& name) const;
  // auto_functionalized_v2 only: the index into `_all_bases` of mutated tensor argument `name`.
  int base_index(const std::string& name) const;
  bool functionalized() const { return functionalized_; }

  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    mk::fail(where(), ": ", parts...);
  }

 private:
  const FxArg& required(const std::string& name, const char* what) const;
  int slot(const std::string& name) const;

  const FxGraph* graph_;
  const FxNode* node_;
  std::string target_;
  bool functionalized_ = false;
  std::vector<std::string> names_;
  std::vector<const FxArg*> values_;
  std::vector<int> base_index_;
};

}  // namespace mk
