#include "itypes/elementwise_fused.h"

#include <cstdio>

#include "ir/error.h"

namespace mk {

const char* fused_dtype_name(DType t) { return t == DType::bf16 ? "bf16" : t == DType::f16 ? "f16" : "f32"; }

namespace {
std::string ref_name(int r, int inputs) {
  return r < inputs ? "x" + std::to_string(r) : "t" + std::to_string(r - inputs);
}
}  // namespace

ElementwiseFused::ElementwiseFused(int inputs, std::vector<FusedStep> steps, std::array<uint8_t, kMaxInputs> bcast)
    : inputs_(inputs), steps_(std::move(steps)), bcast_(bcast) {
  if (inputs_ < 1 || inputs_ > kMaxInputs)
    fail("ElementwiseFused: ", inputs_, " inputs; it takes 1 to ", kMaxInputs);
  const int n = static_cast<int>(steps_.size());
  if (n < 1 || n > kMaxSteps) fail("ElementwiseFused: ", n, " steps; it takes 1 to ", kMaxSteps);
  for (int k = 0; k < kMaxInputs; ++k)
    if (bcast_[k] > 15 || (k >= inputs_ && bcast_[k]))
      fail("ElementwiseFused: broadcast mask ", int(bcast_[k]), " of input ", k, " is not a mask of a used input");
  std::vector<int> reads(inputs_ + n, 0);
  for (int j = 0; j < n; ++j) {
    const FusedStep& s = steps_[j];
    for (int r : s.binary ? std::vector<int>{s.a, s.b} : std::vector<int>{s.a}) {
      if (r < 0 || r >= inputs_ + j)
        fail("ElementwiseFused: step ", j, " reads operand ", r, ", neither an input nor an earlier step");
      ++reads[r];
    }
    if (!is_float(s.dtype)) fail("ElementwiseFused: step ", j, " has dtype ", dtype_name(s.dtype), ", not a float");
  }
  for (int j = 0; j + 1 < n; ++j)
    if (reads[inputs_ + j] == 0) fail("ElementwiseFused: nothing reads step ", j, " (", ref_name(inputs_ + j, inputs_), ")");
  for (int k = 0; k < inputs_; ++k)
    if (reads[k] == 0) fail("ElementwiseFused: no step reads input x", k);
}

std::string ElementwiseFused::params() const {
  std::string p = "x" + std::to_string(inputs_) + ":";
  for (const FusedStep& s : steps_) {
    p += " ";
    if (s.binary) {
      p += std::string(binary_op_name(s.op)) + "(" + ref_name(s.a, inputs_) + "," + ref_name(s.b, inputs_);
      if (s.alpha != 1.0 && (s.op == BinaryOp::add || s.op == BinaryOp::sub)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, ",alpha=%.9g", s.alpha);
        p += buf;
      }
      p += ")";
    } else {
      p += s.unary.text + "(" + ref_name(s.a, inputs_) + ")";
    }
    p += std::string(":") + fused_dtype_name(s.dtype) + ";";
  }
  for (int k = 0; k < inputs_; ++k)
    if (bcast_[k]) p += " bcast_x" + std::to_string(k) + "=" + broadcast_mask_text(bcast_[k]) + ";";
  p.pop_back();  // the last ';'
  return p;
}

void ElementwiseFused::validate(const NodeInfo& n) const {
  require_inputs(n, static_cast<size_t>(inputs_));
  require_outputs(n, 1);
  require_float(n, "output", n.outputs[0].dtype);
  const char* names[kMaxInputs] = {"input x0", "input x1"};
  for (int k = 0; k < inputs_; ++k) require_ew_operand(n, k, names[k], bcast_[k]);
}

int64_t ElementwiseFused::num_instructions(const NodeInfo& n) const {
  return ew_num_tiles(n.outputs[0].padded(), n.profile, inputs_);
}

InstrDesc ElementwiseFused::instruction(const NodeInfo& n, int64_t i) const {
  return ew_instruction(n, inputs_, bcast_.data(), i);
}

}  // namespace mk
