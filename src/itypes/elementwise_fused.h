// ElementwiseFused: a connected group of elementwise nodes computed as one instruction (the DAG pass
// src/trace/fuse_elementwise.h builds it). Tiling, indices and device body are ElementwiseBinary's (one or
// two operands, each with a broadcast mask); the per-element function is a list of steps whose values
// stay in fp32 registers, each rounded to its step's dtype: float16 where the unfused node was float16
// (its range), fp32 otherwise, the last one to the output dtype by the store ([Note: fused rounding] in
// src/trace/fuse_elementwise.cpp). docs/itypes.md.
#pragma once
#include <string>
#include <vector>

#include "itypes/elementwise.h"

namespace mk {

// One step of the function. Operand references: 0 .. inputs-1 are the instruction's inputs (x0, x1),
// inputs + j is step j's value (t<j>).
struct FusedStep {
  bool binary = false;
  UnaryStep unary;         // !binary
  BinaryOp op = BinaryOp::add;  // binary: a op b (add/sub: a +- alpha * b)
  double alpha = 1.0;
  int a = 0, b = -1;
  DType dtype = DType::f32;  // the value is rounded to it (f32: not rounded)
};

// A float step dtype as params() and the device's mk::Round name it: "bf16", "f16", "f32".
const char* fused_dtype_name(DType);

class ElementwiseFused final : public IType {
 public:
  static constexpr int kMaxInputs = 2;   // the index layout of ElementwiseBinary (16 index words)
  static constexpr int kMaxSteps = 64;   // bounds the generated function

  // Throws CompileError on more than kMaxInputs inputs, a step count outside [1, kMaxSteps], an operand
  // reference that is not an input or an earlier step, or a step nothing reads but the last.
  ElementwiseFused(int inputs, std::vector<FusedStep> steps, std::array<uint8_t, kMaxInputs> bcast = {0, 0});
  std::string name() const override { return "ElementwiseFused"; }
  // "x2: relu(x0):bf16; add(t0,x1):bf16" (dtypes bf16, f16, f32) (+ "; bcast_x1=0010" per broadcasting input); alpha is written
  // when not 1 ("sub(t0,x1,alpha=0.5)"), a unary constant as ElementwiseUnary writes it ("mul_scalar:2(t1)").
  std::string params() const override;
  int inputs() const { return inputs_; }
  const std::vector<FusedStep>& steps() const { return steps_; }
  uint8_t broadcast(int k) const { return bcast_[k]; }
  // The fp32 value of the function at one element (x: one value per input): the reference semantics.
  float apply(const float* x) const;

  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return ew_reads_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;

 private:
  int inputs_;
  std::vector<FusedStep> steps_;
  std::array<uint8_t, kMaxInputs> bcast_;
};

}  // namespace mk
