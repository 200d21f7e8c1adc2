// Rope: rotate-half rotary position embedding, y = x * cos + rotate_half(x) * sin (issue 6). Tiling and
// index layout: docs/itypes.md.
#pragma once
#include <cstdint>

#include "itypes/itype.h"

namespace mk {

class Rope final : public IType {
 public:
  // cos_bcast: bit d = padded dim d (b, d, r, c) along which cos and sin (one view layout) broadcast
  // over x; bit 3 (the head dim) is never set for a valid node.
  explicit Rope(uint8_t cos_bcast = 0);
  std::string name() const override { return "Rope"; }
  std::string params() const override;  // "bcast=0110" ("bcast=0000": cos has x's shape)
  uint8_t cos_bcast() const { return bcast_; }
  // The mask for x's and cos's folded views (never throws: validate() checks the shapes).
  static uint8_t mask_for(const TensorRange& x, const TensorRange& cos);
  // (b, d) blocks: consecutive d values per instruction when R < 128 (all R rows each), else 1.
  static int64_t d_per_instruction(const Coord4& x_padded);
  void validate(const NodeInfo&) const override;
  // x: rows, cols and (for several d per instruction) d on the backing's own dims; cos/sin the same
  // once their broadcast dims (one element) are dropped.
  bool reads_view(int k, const TensorRange& v, const Coord4&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  uint8_t bcast_;
};

}  // namespace mk
