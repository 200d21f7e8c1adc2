// Attention: SDPA forward on BHSD tensors (seed §14), causal (top-left aligned, as SDPA) or full,
// any scale, GQA. Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Attention final : public IType {
 public:
  Attention(bool causal, double scale);  // scale > 0 (the resolver fills 1/sqrt(D) for None)
  std::string name() const override { return "Attention"; }
  std::string params() const override;  // "causal=1,scale=0.0883883"
  bool causal() const { return causal_; }
  double scale() const { return scale_; }
  void validate(const NodeInfo&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  bool causal_;
  double scale_;
};

}  // namespace mk
