// Gemm: D = A @ B (+ bias), bf16 (or fp16: flag f16) in, fp32 accumulate, the same 16-bit type out (seed §13). Tiling, tile order, flags
// and index layout: docs/itypes.md.
#pragma once
#include <optional>

#include "itypes/itype.h"

namespace mk {

class Gemm final : public IType {
 public:
  // bias: none; row = a (N,) row added to every row of D (nn.Linear); full = an (M, N) matrix.
  // Leading (batch) dims of the bias either match D's or are 1 (broadcast).
  enum class Bias : uint8_t { none, row, full };
  // Static parameters (one icode each). transpose_a: A's last two view dims run along its backing's
  // last two dims swapped (A^T stored row-major, e.g. `x.t() @ y`); transpose_b likewise (`x @ W.T`).
  // swiglu: D = silu(A @ B) * (A @ B2), a third input B2 (the "up" weight of a SwiGLU MLP, Shazeer 2020,
  // "GLU Variants Improve Transformer") seen exactly as B is on its own backing; no bias.
  // act: an ElementwiseUnary op without a constant ("relu", "gelu", ...; "" = none) applied in fp32
  // after the bias, before the rounding (src/trace/fuse_gemm_act.h folds it in); not with swiglu.
  // rope: head dim D (64 or 128; 0 = none) of a rotate_half rotary embedding applied in fp32 after the
  // bias, before the rounding (src/trace/fuse_gemm_rope.h folds a Rope in): two more inputs, the cos and
  // sin tables, whole bf16 tensors of T x D elements (T rows of D), and output element (m, n) becomes
  // x[m, n] cos[m % T, n % D] + rot[m, n] sin[m % T, n % D], rot[m, n] = -x[m, n + D/2] where n % D < D/2,
  // else x[m, n - D/2]. Output 2-D; no swiglu, act or bias_full.
  // rms_in = eps: an RMSNorm with a weight folded into the Gemms reading its output (src/trace/
  // fuse_rms_norm_gemm.h): A is the norm's input x (2-D, not transposed, K its whole rows), one more input,
  // the norm's weight w (K,) bf16, a graph input; D = rsqrt(mean_k x^2 + eps) * (bf16(x * w) @ B), the row
  // scale applied before everything else in the epilogue; never split along K.
  // eps is a constant of the icode (no index word: a Gemm with a bias has none left).
  struct Flags {
    bool transpose_a = false, transpose_b = false;
    Bias bias = Bias::none;
    bool swiglu = false;
    std::string act;
    int rope = 0;
    std::optional<double> rms_in;
    bool f16 = false;  // operands, bias, tables and D are float16 instead of bfloat16
    bool operator==(const Flags&) const = default;
  };

  Gemm() = default;
  explicit Gemm(Flags f) : flags_(f) {}
  const Flags& flags() const { return flags_; }

  std::string name() const override { return "Gemm"; }
  // Comma-joined "ta", "tb", "bias_row" | "bias_full", "swiglu", "act=<op>", "rope=<D>", "rms_in=<eps>", "f16";
  // "" for plain A @ B.
  std::string params() const override;
  void validate(const NodeInfo&) const override;
  // Batch dims straight, the last two straight or (A, B, swiglu's B2) swapped; no broadcast (require_gemm_view).
  bool reads_view(int k, const TensorRange& v, const Coord4&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  // The bias and the rope tables are read in the epilogue only; the rms weight, a graph input, in the mainloop
  // without a barrier ([Note: gemm rms_in]).
  bool late_input(int k) const override { return k >= (flags_.swiglu ? 3 : 2); }
  // The input index of the cos table (sin follows) of a rope Gemm: after A, B and the bias, if any.
  int rope_input() const { return flags_.bias != Bias::none ? 3 : 2; }
  // The input index of rms_in's weight: after A, B, the bias or B2, the rope tables.
  int rms_w_input() const { return (flags_.bias != Bias::none || flags_.swiglu ? 3 : 2) + (flags_.rope != 0 ? 2 : 0); }
  int num_inputs() const { return rms_w_input() + (flags_.rms_in ? 1 : 0); }
  // How many pieces phase 0 (src/schedule/phase0_split_k.cpp) cuts this node's K into: the count, up
  // to Profile::gemm_split_k, whose instruction waves (plus Profile::gemm_split_chain_steps per extra
  // piece) take the least estimated time, when that is
  // clearly less than unsplit; 1 for swiglu, rope, rms_in, f16 and for Gemms sharing A with others (gemm_group_n).
  int split_k(const NodeInfo&) const;
  // The K extent of each split but the last (a multiple of Profile::gemm_k).
  static int64_t split_k_chunk(int64_t K, int splits, int gemm_k);
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

  // True when the view's last two dims (those wider than 1) run along its backing's last two dims
  // swapped - what the tracer folds from aten.t / transpose / permute - and not straight.
  static bool is_transposed(const TensorRange&);
  // The flags for operand views A, B (and bias, when present), as the tracer binds them; swiglu: the
  // third view is B2, not a bias.
  static Flags flags_for(const std::vector<TensorRange>& inputs, bool swiglu = false, bool f16 = false);

 private:
  void validate_rope(const NodeInfo&) const;
  void validate_rms_in(const NodeInfo&) const;
  Flags flags_;
};

}  // namespace mk
