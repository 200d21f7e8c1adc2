// ElementwiseUnary and ElementwiseBinary (seed §12). Tiling and index layout: docs/itypes.md.
#pragma once
#include <string>
#include <vector>

#include "itypes/itype.h"

namespace mk {

// Tiles of profile.ew_tile_rows x (ew_tile_cols * ew_tiles_per_instruction) over the view's last two
// dims; instruction i covers tile (b, d, rt, ct) in row-major order, clipped at the view edge.
struct EwTile {
  Coord4 origin;      // view point (b, d, r0, c0)
  int64_t rows = 0, cols = 0;
};
int64_t ew_num_tiles(const Coord4& shape, const Profile&);
EwTile ew_tile(const Coord4& shape, const Profile&, int64_t i);

class ElementwiseUnary final : public IType {
 public:
  // ops, applied left to right: identity, relu, abs, exp, exp2, log, log2, neg, sqrt, rsqrt.
  // Throws CompileError on an unknown op name.
  explicit ElementwiseUnary(std::vector<std::string> ops);
  std::string name() const override { return "ElementwiseUnary"; }
  std::string params() const override;  // "ops=relu,abs"
  const std::vector<std::string>& ops() const { return ops_; }
  void validate(const NodeInfo&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  void execute(const Instruction&, ExecContext&) const override;
  static const std::vector<std::string>& supported_ops();

 private:
  std::vector<std::string> ops_;
};

class ElementwiseBinary final : public IType {
 public:
  // op: add, sub, mul, div, maximum, minimum. add/sub compute a + alpha*b / a - alpha*b.
  // inplace: output 0 aliases input 0 (the megakittens::elementwise_binary_ custom op).
  ElementwiseBinary(std::string op, double alpha = 1.0, bool inplace = false);
  std::string name() const override { return "ElementwiseBinary"; }
  std::string params() const override;  // "op=add,alpha=1" (+ ",inplace")
  const std::string& op() const { return op_; }
  double alpha() const { return alpha_; }
  bool inplace() const { return inplace_; }
  void validate(const NodeInfo&) const override;
  int64_t num_instructions(const NodeInfo&) const override;
  InstrDesc instruction(const NodeInfo&, int64_t i) const override;
  std::optional<int> inplace_input(int output) const override;
  void execute(const Instruction&, ExecContext&) const override;
  static const std::vector<std::string>& supported_ops();

 private:
  std::string op_;
  double alpha_;
  bool inplace_;
};

}  // namespace mk
