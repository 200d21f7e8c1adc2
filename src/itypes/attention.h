// Attention: SDPA forward on BHSD views (seed §14), causal (top-left aligned, as SDPA) or full,
// any scale, GQA, bf16 or (f16) fp16 operands, and optionally an additive mask of their dtype (input 3, SDPA's float attn_mask; boolean masks
// reach it as 0 / -inf, megakittens/sdpa_math.py). Layout and indices: docs/itypes.md; device body: kernels/mk/itypes/attention.cuh.
#pragma once
#include "itypes/itype.h"

namespace mk {

class Attention final : public IType {
 public:
  // Which of q, k, v (bit 0, 1, 2) are (B, H, S, D) views of a (B, S, H, D) tensor - the
  // `.view(B, S, H, D).transpose(1, 2)` that models feed SDPA - read in place through strides; bit 3:
  // the output is stored as (B, S, H, D), what models transpose SDPA's output back to
  // (src/trace/fuse_attention_output.h).
  static constexpr unsigned kBshdQ = 1, kBshdK = 2, kBshdV = 4, kBshdO = 8;

  // scale > 0 (the resolver fills 1/sqrt(D)); masked: input 3 is an additive mask ([Note: attention mask]);
  // f16: q, k, v, o (and the mask) are float16, else bfloat16.
  Attention(bool causal, double scale, unsigned bshd = 0, bool masked = false, bool f16 = false);
  std::string name() const override { return "Attention"; }
  // "causal=1,scale=0.0883883476", plus ",bshd=qkvo" (the operands stored as (B, S, H, D)) when any and
  // ",mask=add" when masked, ",f16" for float16 operands.
  std::string params() const override;
  // The same Attention with another bshd mask (the fusion passes that fold q / k / v / o views).
  std::shared_ptr<const Attention> with_bshd(unsigned bshd) const {
    return std::make_shared<Attention>(causal_, scale_, bshd, masked_, f16_);
  }
  bool causal() const { return causal_; }
  bool masked() const { return masked_; }
  bool f16() const { return f16_; }
  double scale() const { return scale_; }
  unsigned bshd() const { return bshd_; }
  // The bshd mask of the folded q, k, v views (a (B, S, H, D) backing seen through transpose(1, 2));
  // validate() checks every view against it.
  static unsigned bshd_for(const std::vector<TensorRange>& views);
  // Whole tensors and (B, S, H, D) transposes are read in place; the tracer copies any other view.
  // The mask (input 3): a whole (Bm, Hm, Sqm, Sk) tensor, seen as (B, H, Sq, Sk) with Bm, Hm, Sqm each 1
  // (a broadcast) or full: mask_view().
  bool reads_view(int k, const TensorRange& view, const Coord4& backing) const override;
  // The mask is read by the consumers' own loads ([Note: attention mask]), not by the loader's TMA.
  bool late_input(int k) const override { return masked_ && k == 3; }
  static bool mask_view(const TensorRange& view, const Coord4& backing);
  void validate(const NodeInfo&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  // Causal: the keys the tile attends to plus one q tile (its Q load and epilogue); else 0 (uniform).
  double cost(const NodeInfo&, const InstrDesc&) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  bool causal_;
  double scale_;
  unsigned bshd_;
  bool masked_;
  bool f16_;
};

}  // namespace mk
