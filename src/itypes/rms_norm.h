// RMSNorm over the last dim (seed §12), eps taken from the graph. Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class RMSNorm final : public IType {
 public:
  // y = x * rsqrt(mean(x^2, -1) + eps) * weight; has_weight=false drops the weight input; f16: x, y and the
  // weight are float16, else bfloat16.
  explicit RMSNorm(double eps, bool has_weight = true, bool f16 = false);
  std::string name() const override { return "RMSNorm"; }
  std::string params() const override;  // "eps=1e-05" (+ ",no_weight", ",f16")
  double eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }
  bool f16() const { return f16_; }
  // Rows per instruction for `total_rows` rows of `cols` (all batches): pages of rows, each row padded
  // to 128 bytes; as many pages (up to profile.rms_norm_pages) as keep every SM busy.
  static int64_t rows_per_instruction(int64_t cols, int64_t total_rows, const Profile&);
  // Instructions per (b, d) plane of the padded shape `s`: balanced when profile.rms_norm_balance
  // ([Note: balanced row tiles]: tiles of equal rows but for one), else ceil(rows / rows_per_instruction).
  static int64_t tiles_per_plane(const Coord4& s, const Profile&);
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  double eps_;
  bool has_weight_;
  bool f16_;
};

}  // namespace mk
