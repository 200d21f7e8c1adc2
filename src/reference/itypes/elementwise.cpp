// CPU reference semantics of ElementwiseUnary / ElementwiseBinary (docs/itypes.md).
#include "itypes/elementwise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/exec.h"
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
    case O::add_scalar: return x + k;
    case O::mul_scalar: return x * k;
    case O::div_scalar: return x / k;
    case O::pow_scalar: return std::pow(x, k);
    case O::clamp_min: return x < k ? k : x;  // NaN stays NaN, as torch.clamp_min
    case O::clamp_max: return x > k ? k : x;
  }
  return std::numeric_limits<float>::quiet_NaN();  // unreachable: parse() checks the op
}

namespace {

// The tile at backing origin idx[0..3], one (b, d) deep, rows x cols.
Box tile_at(const int32_t* idx, int64_t rows, int64_t cols) {
  return {{idx[0], idx[1], idx[2], idx[3]}, {idx[0] + 1, idx[1] + 1, idx[2] + rows, idx[3] + cols}};
}

}  // namespace

void ElementwiseUnary::execute(const Instruction& in, ExecContext& ctx) const {
  const int64_t rows = in.indices[8], cols = in.indices[9];
  std::vector<float> v = ctx.load(in.src_tensors[0], tile_at(in.indices, rows, cols));
  for (float& x : v)
    for (const UnaryStep& st : steps_) x = st.apply(x);
  ctx.store(in.dst_tensors[0], tile_at(in.indices + 4, rows, cols), v);
}

void ElementwiseBinary::execute(const Instruction& in, ExecContext& ctx) const {
  const int64_t rows = in.indices[12], cols = in.indices[13];
  // A broadcast operand's tile is 1 wide along its broadcast rows/cols (dims 2/3); its origin already
  // sits on its single backing element along broadcast batch dims (0/1).
  int64_t r[2], c[2];
  for (int k = 0; k < 2; ++k) {
    r[k] = (bcast_[k] >> 2 & 1) ? 1 : rows;
    c[k] = (bcast_[k] >> 3 & 1) ? 1 : cols;
  }
  const std::vector<float> a = ctx.load(in.src_tensors[0], tile_at(in.indices, r[0], c[0]));
  const std::vector<float> b = ctx.load(in.src_tensors[1], tile_at(in.indices + 4, r[1], c[1]));
  const float alpha = static_cast<float>(alpha_);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y(static_cast<size_t>(rows * cols));
  for (size_t k = 0; k < y.size(); ++k) {
    const int64_t i = static_cast<int64_t>(k) / cols, j = static_cast<int64_t>(k) % cols;
    const float x = a[(r[0] == 1 ? 0 : i) * c[0] + (c[0] == 1 ? 0 : j)];
    const float z = b[(r[1] == 1 ? 0 : i) * c[1] + (c[1] == 1 ? 0 : j)];
    if (op_ == "add") y[k] = x + alpha * z;
    else if (op_ == "sub") y[k] = x - alpha * z;
    else if (op_ == "mul") y[k] = x * z;
    else if (op_ == "div") y[k] = x / z;
    // torch.maximum/minimum propagate NaN.
    else if (op_ == "maximum") y[k] = std::isnan(x) || std::isnan(z) ? nan : std::max(x, z);
    else if (op_ == "minimum") y[k] = std::isnan(x) || std::isnan(z) ? nan : std::min(x, z);
    else y[k] = nan;
  }
  ctx.store(in.dst_tensors[0], tile_at(in.indices + 8, rows, cols), y);
}

}  // namespace mk
