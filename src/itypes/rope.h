// Rope: rotary position embedding, y = x * cos + rot(x) * sin (issue 6): rot = rotate_half (the halves
// rotate, Llama's layout) or, interleaved, rotate_every_two (the pairs (2i, 2i + 1) rotate: GPT-J's and
// Cohere's). Tiling and index layout: docs/itypes.md.
#pragma once
#include <cstdint>

#include "itypes/itype.h"

namespace mk {

class Rope final : public IType {
 public:
  // cos_bcast: bit d = padded dim d (b, d, r, c) along which cos and sin (one view layout) broadcast
  // over x; bit 3 (the head dim) is never set for a valid node. x_bshd: x is a (B, S, H, D) backing seen
  // through transpose(1, 2) (HF's q and k), read in place: its rows run along backing dim 1.
  // half_tables (interleaved only): cos / sin hold D/2 columns, column c of x using c / 2 (the tables a
  // repeat_interleave(2, -1) would widen: Helium's and Glm's layout).
  explicit Rope(uint8_t cos_bcast = 0, bool x_bshd = false, bool interleaved = false, bool half_tables = false);
  std::string name() const override { return "Rope"; }
  // "bcast=0110" ("bcast=0000": cos has x's shape), plus ",x_bshd", ",interleaved", ",half_tables".
  std::string params() const override;
  uint8_t cos_bcast() const { return bcast_; }
  bool x_bshd() const { return x_bshd_; }
  bool interleaved() const { return interleaved_; }
  bool half_tables() const { return half_; }
  // Whether the folded cos view holds half of x's last dim (interleaved tables before their repeat).
  static bool half_for(const TensorRange& x, const TensorRange& cos);
  // Whether x's folded view needs x_bshd (rows along backing dim 1, not readable as a plain tile view).
  static bool bshd_for(const TensorRange& x);
  // The mask for x's and cos's folded views (never throws: validate() checks the shapes).
  static uint8_t mask_for(const TensorRange& x, const TensorRange& cos);
  // (b, d) blocks: consecutive d values per instruction when R < 128 (all R rows each), else 1 (always
  // 1 with x_bshd, whose consecutive d are not consecutive rows of the backing).
  static int64_t d_per_instruction(const Coord4& x_padded, bool x_bshd = false);
  void validate(const NodeInfo&) const override;
  // x: rows, cols and (for several d per instruction) d on the backing's own dims, or the bshd view;
  // cos/sin the former once their broadcast dims (one element) are dropped.
  bool reads_view(int k, const TensorRange& v, const Coord4&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  uint8_t bcast_;
  bool x_bshd_, interleaved_, half_;
};

}  // namespace mk
