// ElementwiseUnary and ElementwiseBinary (seed §12). Tiling and index layout: docs/itypes.md.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "itypes/itype.h"

namespace mk {

// Tiles of profile.ew_tile_rows x (ew_tile_cols * ew_tiles(...)) over the view's last two dims;
// instruction i covers tile (b, d, rt, ct) in row-major order, clipped at the view edge.
struct EwTile {
  Coord4 origin;      // view point (b, d, r0, c0)
  int64_t rows = 0, cols = 0;
  int64_t planes = 1; // consecutive d planes (ew_plane_tile)
};
// Column tiles per instruction for an output of `shape` and `inputs` operands (profile.h).
int64_t ew_tiles(const Coord4& shape, const Profile&, int inputs);
int64_t ew_num_tiles(const Coord4& shape, const Profile&, int inputs);
EwTile ew_tile(const Coord4& shape, const Profile&, int inputs, int64_t i);
// One-input tiles that may stack whole planes (Copy, Cat): when one tile covers a whole (rows, cols) plane,
// consecutive d share an instruction, up to one tile's elements, while every SM still gets one. Small
// planes (the attention output's BHSD -> BSHD copy: heads x head_dim; a convolution's 7 x 7 taps) would
// otherwise make one tiny instruction per plane, dominated by its fixed cost (barrier waits, the publish
// fence). Else ew_tile's tiles, one plane each.
// `node_planes`: the planes of the whole node (a Cat's inputs together), which the SMs share; -1: shape's.
int64_t ew_num_plane_tiles(const Coord4& shape, const Profile&, int64_t node_planes = -1);
EwTile ew_plane_tile(const Coord4& shape, const Profile&, int64_t i, int64_t node_planes = -1);

// Bit d set = padded dim d (b, d, r, c) of view `r` broadcasts over an output of padded shape `out`
// (size 1 there while the output is wider, or a broadcast view dim). Shared by ElementwiseBinary and Rope.
uint8_t broadcast_mask(const TensorRange& r, const Coord4& out);
std::string broadcast_mask_text(uint8_t mask);  // "0110": one char per padded dim b, d, r, c

// The tile instruction of an elementwise node (ElementwiseUnary / Binary / Fused) over `inputs` operands,
// bcast[k] the broadcast mask of input k: indices `x_k origin (4 each) | y origin | rows cols`, input k's
// tile starting at view coordinate 0 and 1 wide along its broadcast dims (docs/itypes.md).
InstrDesc ew_instruction(const NodeInfo&, int inputs, const uint8_t* bcast, int64_t i);
// Checks input k (named `what`) of an elementwise node: floating, rank <= 4, broadcasting to the output
// along exactly the padded dims of `mask`, its tile a tile view. Throws CompileError naming the node.
void require_ew_operand(const NodeInfo&, int k, const char* what, uint8_t mask);
// reads_view of the elementwise ITypes: tile views whose broadcast dims (folded expands) may run anywhere.
bool ew_reads_view(const TensorRange&);

// The binary ops in fp32, torch semantics: add/sub are a +- alpha * b, div is true division, maximum and
// minimum propagate NaN; select is b where a != 0, else 0 (torch.where(a != 0, b, 0): the masked_fill / where
// of megakittens/masks.py, whose masks are 0 / 1). The device's mk::binary (kernels/mk/itypes/elementwise.cuh)
// computes the same.
enum class BinaryOp { add, sub, mul, div, maximum, minimum, select };
const char* binary_op_name(BinaryOp);  // "add"
BinaryOp parse_binary_op(const std::string& name);  // throws CompileError naming the supported ops
float binary_apply(BinaryOp, float a, float b, float alpha);

// One step of an ElementwiseUnary op list. The scalar forms carry a constant k, written "name:k" with k
// as canonical %.9g text ("add_scalar:2.5", "clamp_min:0"); k is that text parsed and rounded to fp32.
struct UnaryStep {
  enum class Op {
    identity, relu, abs, exp, exp2, log, log2, neg, sqrt, rsqrt,           // seed ops
    silu, gelu, gelu_tanh, sigmoid, tanh, cos, sin, reciprocal, square,     // no constant
    erf, expm1, log1p,
    add_scalar, mul_scalar, div_scalar, pow_scalar, clamp_min, clamp_max,  // x+k, x*k, x/k, x^k, max, min
  };
  Op op = Op::identity;
  std::string name;     // "add_scalar" (the device enum mk::Unary::<name>)
  bool has_k = false;   // the scalar forms
  float k = 0.f;
  std::string text;     // canonical: "add_scalar:2.5", "relu"

  // Parses "name" or "name:k"; throws CompileError on an unknown name, a missing or unexpected constant,
  // or a constant that is not a number.
  static UnaryStep parse(const std::string& s);
  // "name:k" with k = %.9g of `value` (the resolvers' way to build a scalar step).
  static std::string with_constant(const std::string& name, double value);
  float apply(float x) const;  // the fp32 reference semantics (src/reference/itypes/elementwise.cpp)
};

class ElementwiseUnary final : public IType {
 public:
  // ops, applied left to right: identity, relu, abs, exp, exp2, log, log2, neg, sqrt, rsqrt, silu, gelu
  // (exact, erf), gelu_tanh, sigmoid, tanh, cos, sin, reciprocal, square, erf, expm1, log1p, and the scalar forms
  // add_scalar:k (x + k), mul_scalar:k, div_scalar:k (x / k, true division), pow_scalar:k (powf),
  // clamp_min:k, clamp_max:k (NaN propagates). Throws CompileError on an unknown op name.
  explicit ElementwiseUnary(std::vector<std::string> ops);
  std::string name() const override { return "ElementwiseUnary"; }
  std::string params() const override;  // "ops=relu,abs", "ops=mul_scalar:0.5,add_scalar:1"
  const std::vector<std::string>& ops() const { return ops_; }  // canonical step texts
  const std::vector<UnaryStep>& steps() const { return steps_; }
  bool has_constants() const;  // any scalar step
  void validate(const NodeInfo&) const override;
  bool reads_view(int, const TensorRange& v, const Coord4&) const override { return tile_view(v); }
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;
  static const std::vector<std::string>& supported_ops();  // names; the scalar forms take ":k"

 private:
  std::vector<std::string> ops_;
  std::vector<UnaryStep> steps_;
};

class ElementwiseBinary final : public IType {
 public:
  // Per operand (a, b): bit d set = padded dim d (b, d, r, c) of that operand broadcasts over the output
  // (torch rules: its view has size 1 there, or is a broadcast view dim, while the output is wider).
  using Broadcast = std::array<uint8_t, 2>;

  // op: add, sub, mul, div, maximum, minimum. add/sub compute a + alpha*b / a - alpha*b.
  // inplace: output 0 aliases input 0 (the megakittens::elementwise_binary_ custom op).
  // broadcast: the operands' broadcast dims (mask bits 0..3); {0, 0} is the plain form.
  ElementwiseBinary(std::string op, double alpha = 1.0, bool inplace = false, Broadcast broadcast = {0, 0});
  std::string name() const override { return "ElementwiseBinary"; }
  // "op=add,alpha=1" (+ ",inplace") (+ ",bcast_a=0011" / ",bcast_b=0010": per padded dim b,d,r,c,
  // only for an operand that broadcasts).
  std::string params() const override;
  const std::string& op() const { return op_; }
  BinaryOp binary_op() const { return bop_; }
  double alpha() const { return alpha_; }
  bool inplace() const { return inplace_; }
  const Broadcast& broadcast() const { return bcast_; }
  bool broadcasts() const { return bcast_[0] || bcast_[1]; }
  // torch broadcasting of the operand views a, b: the output's padded shape and each operand's mask.
  // Throws CompileError naming both shapes when they do not broadcast.
  static Broadcast broadcast_for(const TensorRange& a, const TensorRange& b, Coord4* out_padded = nullptr);
  void validate(const NodeInfo&) const override;
  // Tile views whose broadcast dims (folded expands) may run anywhere.
  bool reads_view(int k, const TensorRange& v, const Coord4&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  std::optional<int> inplace_input(int output) const override;
  void execute(const Instruction&, ExecContext&) const override;
  static const std::vector<std::string>& supported_ops();  // in BinaryOp order

 private:
  std::string op_;
  BinaryOp bop_;
  double alpha_;
  bool inplace_;
  Broadcast bcast_;
};

}  // namespace mk
