// Gemm: D = A @ B, bf16 in, fp32 accumulate, bf16 out (seed §13). Tiling, tile order and index
// layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Gemm final : public IType {
 public:
  std::string name() const override { return "Gemm"; }
  void validate(const NodeInfo&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;
};

}  // namespace mk
