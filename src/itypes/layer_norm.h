// LayerNorm over the last dim (aten.native_layer_norm's output 0, megakittens/decompose.py), eps from the
// graph, optional weight and bias. Layout: docs/itypes.md.
#pragma once
#include "itypes/itype.h"

namespace mk {

class LayerNorm final : public IType {
 public:
  // y = (x - mean(x)) * rsqrt(var(x) + eps) * weight + bias over the last dim, var biased, in fp32,
  // rounded once to y's dtype (torch's computation); without weight / bias those terms drop.
  LayerNorm(double eps, bool has_weight, bool has_bias);
  std::string name() const override { return "LayerNorm"; }
  std::string params() const override;  // "eps=1e-05" (+ ",no_weight", ",no_bias")
  double eps() const { return eps_; }
  bool has_weight() const { return has_weight_; }
  bool has_bias() const { return has_bias_; }
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  double eps_;
  bool has_weight_, has_bias_;
};

}  // namespace mk
