// CPU reference semantics of ElementwiseUnary / ElementwiseBinary (docs/itypes.md).
#include "itypes/elementwise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

namespace {

// The tile at backing origin idx[0..3], one (b, d) deep, rows x cols.
Box tile_at(const int32_t* idx, int64_t rows, int64_t cols) {
  return {{idx[0], idx[1], idx[2], idx[3]}, {idx[0] + 1, idx[1] + 1, idx[2] + rows, idx[3] + cols}};
}

float apply_unary(const std::string& op, float x) {
  if (op == "identity") return x;
  if (op == "relu") return x < 0.f ? 0.f : x;  // keeps NaN, as torch.relu
  if (op == "abs") return std::fabs(x);
  if (op == "exp") return std::exp(x);
  if (op == "exp2") return std::exp2(x);
  if (op == "log") return std::log(x);
  if (op == "log2") return std::log2(x);
  if (op == "neg") return -x;
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1.f / std::sqrt(x);
  return std::numeric_limits<float>::quiet_NaN();  // unreachable: the constructor checks ops
}

}  // namespace

void ElementwiseUnary::execute(const Instruction& in, ExecContext& ctx) const {
  const int64_t rows = in.indices[8], cols = in.indices[9];
  std::vector<float> v = ctx.load(in.src_tensors[0], tile_at(in.indices, rows, cols));
  for (float& x : v)
    for (const auto& op : ops_) x = apply_unary(op, x);
  ctx.store(in.dst_tensors[0], tile_at(in.indices + 4, rows, cols), v);
}

void ElementwiseBinary::execute(const Instruction& in, ExecContext& ctx) const {
  const int64_t rows = in.indices[12], cols = in.indices[13];
  const std::vector<float> a = ctx.load(in.src_tensors[0], tile_at(in.indices, rows, cols));
  const std::vector<float> b = ctx.load(in.src_tensors[1], tile_at(in.indices + 4, rows, cols));
  const float alpha = static_cast<float>(alpha_);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    const float x = a[k], z = b[k];
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
