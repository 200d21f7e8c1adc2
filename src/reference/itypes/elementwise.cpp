// CPU reference semantics of ElementwiseUnary / ElementwiseBinary / ElementwiseFused (docs/itypes.md).
#include "itypes/elementwise_fused.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/exec.h"
#include "reference/memory.h"
#include "schedule/instruction.h"

namespace mk {

// fp32 semantics of one step (the device's kernels/mk/itypes/elementwise.cuh computes the same functions).
float UnaryStep::apply(float x) const {
  using O = Op;
  switch (op) {
    case O::identity: return x;
    case O::relu: return x < 0.f ? 0.f : x;  // keeps NaN, as torch.relu
    case O::abs: return std::fabs(x);
    case O::exp: return std::exp(x);
    case O::exp2: return std::exp2(x);
    case O::log: return std::log(x);
    case O::log2: return std::log2(x);
    case O::neg: return -x;
    case O::sqrt: return std::sqrt(x);
    case O::rsqrt: return 1.f / std::sqrt(x);
    case O::silu: return x / (1.f + std::exp(-x));
    case O::gelu: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case O::gelu_tanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2/pi)
      return 0.5f * x * (1.f + std::tanh(inner));
    }
    case O::sigmoid: return 1.f / (1.f + std::exp(-x));
    case O::tanh: return std::tanh(x);
    case O::cos: return std::cos(x);
    case O::sin: return std::sin(x);
    case O::reciprocal: return 1.f / x;
    case O::square: return x * x;
    case O::erf: return std::erf(x);
    case O::expm1: return std::expm1(x);
    case O::log1p: return std::log1p(x);
    case O::add_scalar: return x + k;
    case O::mul_scalar: return x * k;
    case O::div_scalar: return x / k;
    case O::pow_scalar: return std::pow(x, k);
    case O::clamp_min: return x < k || std::isnan(k) ? k : x;  // a NaN x or bound gives NaN, as torch.clamp
    case O::clamp_max: return x > k || std::isnan(k) ? k : x;
  }
  return std::numeric_limits<float>::quiet_NaN();  // unreachable: parse() checks the op
}

namespace {

// The tile at backing origin idx[0..3], one (b, d) deep, rows x cols.
Box tile_at(const int32_t* idx, int64_t rows, int64_t cols) {
  return {{idx[0], idx[1], idx[2], idx[3]}, {idx[0] + 1, idx[1] + 1, idx[2] + rows, idx[3] + cols}};
}

}  // namespace

namespace {

// y = f(x_0, ..., x_{n-1}) over the tile of an elementwise instruction with n operands (indices of
// ew_instruction). A broadcast operand's tile is 1 wide along its broadcast rows/cols (dims 2/3); its
// origin already sits on its single backing element along broadcast batch dims (0/1).
template <class F>
void ew_execute(const Instruction& in, ExecContext& ctx, int n, const uint8_t* bcast, F f) {
  const int64_t rows = in.indices[4 * n + 4], cols = in.indices[4 * n + 5];
  std::vector<std::vector<float>> x(n);
  std::vector<int64_t> r(n), c(n);
  for (int k = 0; k < n; ++k) {
    r[k] = (bcast[k] >> 2 & 1) ? 1 : rows;
    c[k] = (bcast[k] >> 3 & 1) ? 1 : cols;
    x[k] = ctx.load(in.src_slot(k), tile_at(in.indices + 4 * k, r[k], c[k]));
  }
  std::vector<float> y(static_cast<size_t>(rows * cols));
  float v[ElementwiseFused::kMaxInputs];
  for (size_t e = 0; e < y.size(); ++e) {
    const int64_t i = static_cast<int64_t>(e) / cols, j = static_cast<int64_t>(e) % cols;
    for (int k = 0; k < n; ++k) v[k] = x[k][(r[k] == 1 ? 0 : i) * c[k] + (c[k] == 1 ? 0 : j)];
    y[e] = f(v);
  }
  ctx.store(in.dst_slot(0), tile_at(in.indices + 4 * n, rows, cols), y);
}

float round_to(DType t, float v) {
  if (t == DType::bf16) return bf16_to_float(float_to_bf16(v));
  if (t == DType::f16) return f16_to_float(float_to_f16(v));
  return v;
}

}  // namespace

void ElementwiseUnary::execute(const Instruction& in, ExecContext& ctx) const {
  const uint8_t none = 0;
  ew_execute(in, ctx, 1, &none, [&](const float* v) {
    float x = v[0];
    for (const UnaryStep& st : steps_) x = st.apply(x);
    return x;
  });
}

void ElementwiseBinary::execute(const Instruction& in, ExecContext& ctx) const {
  const float alpha = static_cast<float>(alpha_);
  ew_execute(in, ctx, 2, bcast_.data(), [&](const float* v) { return binary_apply(bop_, v[0], v[1], alpha); });
}

float ElementwiseFused::apply(const float* x) const {
  float t[kMaxSteps];
  auto ref = [&](int r) { return r < inputs_ ? x[r] : t[r - inputs_]; };
  for (size_t j = 0; j < steps_.size(); ++j) {
    const FusedStep& s = steps_[j];
    const float v = s.binary ? binary_apply(s.op, ref(s.a), ref(s.b), static_cast<float>(s.alpha)) : s.unary.apply(ref(s.a));
    t[j] = round_to(s.dtype, v);
  }
  return t[steps_.size() - 1];
}

void ElementwiseFused::execute(const Instruction& in, ExecContext& ctx) const {
  ew_execute(in, ctx, inputs_, bcast_.data(), [&](const float* v) { return apply(v); });
}

}  // namespace mk
