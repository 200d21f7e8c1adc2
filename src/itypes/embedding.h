// Embedding: gather rows of a weight table by integer ids (aten.embedding). Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Embedding final : public IType {
 public:
  std::string name() const override { return "Embedding"; }
  // Inputs: weight (V, C), ids (...) int64/int32 (rank <= 3); output (..., C) in the weight's dtype.
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  // Throws std::out_of_range (Python: IndexError) for an id outside [0, V): never reads past the table.
  void execute(const Instruction&, ExecContext&) const override;
};

}  // namespace mk
