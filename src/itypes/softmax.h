// Softmax / log-softmax over the last dim in one row instruction (aten._softmax, _log_softmax,
// _safe_softmax through megakittens/decompose.py). Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Softmax final : public IType {
 public:
  // log: log-softmax; safe: a row whose max is -inf (every key masked) gives zeros instead of NaN
  // (aten._safe_softmax). fp32 math, rounded once to y's dtype.
  Softmax(bool log, bool safe);
  std::string name() const override { return "Softmax"; }
  std::string params() const override;  // "" / "log" / "safe" / "log,safe"
  bool log() const { return log_; }
  bool safe() const { return safe_; }
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  bool log_, safe_;
};

}  // namespace mk
