// The IType contract, host side (seed §03, DESIGN §4). An instruction type says how a node is cut
// into tile-sized instructions, what each instruction reads and writes (access regions, from which
// the scheduler derives barriers), how its pages are released, and - in reference/itypes/ - what
// one packed instruction computes on the CPU.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "itypes/profile.h"

namespace mk {

struct Instruction;
class ExecContext;

// One tensor operand of a node: the view `range` of a backing tensor `backing` (a tensor slot).
struct Operand {
  TensorMeta backing;
  TensorRange range;

  DType dtype() const { return backing.dtype; }
  const std::vector<int64_t>& shape() const { return range.view_shape; }  // unpadded view shape
  Coord4 padded() const { return range.view_padded(); }
  // Converts a view point to a backing point, the coordinates instructions carry.
  Coord4 origin(const Coord4& view_point) const { return range.to_backing(view_point); }
};

// What an IType sees of its node while validating and tiling.
struct NodeInfo {
  std::string name;    // FX node name, for messages
  std::string target;  // FX target
  std::vector<Operand> inputs;
  std::vector<TensorMeta> outputs;
  Profile profile;
  int cluster_size = 1;
  // Gemm: the N of every Gemm node reading the same A view as this one (this one included) when there
  // are several, e.g. a layer's q, k and v projections: their tiles run side by side, so the tile width
  // is chosen for the group (src/itypes/gemm.cpp gemm_tile_n). Empty otherwise.
  std::vector<int64_t> gemm_group_n;
};

// One instruction as its IType describes it, before the scheduler assigns slots and barriers.
struct InstrDesc {
  std::vector<int32_t> indices;          // <= 16 words; coordinates on the backing tensors
  std::vector<std::vector<Box>> reads;   // per input operand: boxes in that operand's view coords
  std::vector<std::vector<Box>> writes;  // per output: boxes in output coords
};

class IType {
 public:
  virtual ~IType() = default;
  virtual std::string name() const = 0;              // class name, e.g. "ElementwiseUnary"
  virtual std::string params() const { return ""; }  // static parameters as canonical text
  std::string str() const;                           // "ElementwiseUnary(ops=relu)"
  // snake_case of name(): the custom op is torch.ops.megakittens.<op_name()>.
  std::string op_name() const;

  // Throws CompileError naming the node, the op, the constraint and the value.
  virtual void validate(const NodeInfo&) const = 0;
  virtual int64_t num_instructions(const NodeInfo&) const = 0;
  virtual InstrDesc instruction(const NodeInfo&, int64_t i) const = 0;
  // Relative run time of instruction `d` (any unit, > 0), for the placement of a node's instructions
  // on the SMs (src/schedule/phase1_place.cpp [Note: cost-balanced placement]); 0 (the default): all of
  // the node's instructions cost the same and keep their order.
  virtual double cost(const NodeInfo&, const InstrDesc&) const { return 0; }
  // [Note: page release order] which logical page this instruction releases `query`-th (seed §10).
  virtual int lid_release_order(int query, const Profile&) const { return query; }
  // The input an output aliases (written in place), if any.
  virtual std::optional<int> inplace_input(int output) const { return std::nullopt; }
  // Whether input `k` is read only by the compute, after the loads (a Gemm's bias, read in its
  // epilogue): its barriers are waited on late, so the loads need not wait for it (docs/instruction.md).
  virtual bool late_input(int k) const { return false; }
  // [Note: view copies] Whether this IType reads input `k` through `view` (on a backing tensor of
  // padded shape `backing`) directly. When not, the tracer inserts a Copy node that materialises the
  // view as a fresh contiguous tensor. Default: only whole tensors; ITypes that address tiles through
  // origins override it (tile_view()).
  virtual bool reads_view(int k, const TensorRange& view, const Coord4& backing) const {
    return view.is_full(backing);
  }
  // CPU reference semantics of one packed instruction (defined in reference/itypes/).
  virtual void execute(const Instruction&, ExecContext&) const = 0;

  // ITypes are equal when class and static parameters are (one icode per distinct IType, DESIGN §4).
  bool same_as(const IType& o) const { return name() == o.name() && params() == o.params(); }
};

using ITypePtr = std::shared_ptr<const IType>;

// Noop (icode 0): pads node ranges to the cluster size and fills empty table slots.
class Noop final : public IType {
 public:
  std::string name() const override { return "Noop"; }
  void validate(const NodeInfo&) const override {}
  int64_t num_instructions(const NodeInfo&) const override { return 0; }
  InstrDesc instruction(const NodeInfo&, int64_t) const override { return {}; }
  void execute(const Instruction&, ExecContext&) const override {}
};

// Helpers shared by the ITypes' validate() and instruction().
std::string shape_str(const std::vector<int64_t>&);  // "[1024, 1024]"
// Indices address a tile as origin + extents on the backing tensor's last two dims, so a view's rows
// and cols (when wider than 1) must run along those dims, not along a selected one (x[:, i]).
void require_tile_view(const NodeInfo&, const char* what, const Operand&);
void require_outputs(const NodeInfo&, size_t n);
void push_origin(std::vector<int32_t>& indices, const Coord4& origin);
void require_rank(const NodeInfo&, const char* what, const std::vector<int64_t>& shape, int lo, int hi);
void require_dtype(const NodeInfo&, const char* what, DType got, DType want);
// A floating-point dtype (bfloat16, float16, float32): what the fp32 reference math loads and stores.
bool is_float(DType);
// The 16-bit float type of a tensor-core IType's operands: float16 when its f16 parameter is set, else bfloat16.
inline DType half_dtype(bool f16) { return f16 ? DType::f16 : DType::bf16; }
void require_float(const NodeInfo&, const char* what, DType got);
// The view rule of require_tile_view, and no broadcast dims: what reads_view() of the tile-addressed
// ITypes accepts.
bool tile_view(const TensorRange&);
void require_inputs(const NodeInfo&, size_t n);
int64_t ceil_div(int64_t a, int64_t b);
// Rows of `cols` elements of `elem_bytes` that fit one page, each row padded to 128 bytes (at least 1):
// the row tiles of the row-wise ITypes (Embedding, RowReduce; RMSNorm's pages of rows).
int64_t rows_per_page(int64_t cols, int elem_bytes, const Profile&);
// Row tiles of the row-wise ITypes: a padded shape (b, d, r, C) cut into `n`-row tiles, instruction i
// = tile (b, d, rt) in row-major order, the last one of each (b, d) clipped.
struct RowTile {
  Coord4 origin;  // (b, d, r0, 0)
  int64_t rows;
};
int64_t num_row_tiles(const Coord4& shape, int64_t n);
RowTile row_tile(const Coord4& shape, int64_t n, int64_t i);
// The row tiles of input 0 in pages of its rows (rows_per_page of its C and dtype): RowReduce, Softmax and
// LayerNorm's instructions, their count and the i-th with its box over the padded shape.
int64_t num_page_row_tiles(const NodeInfo&);
// Their common checks: `inputs` inputs, one output, input 0 a floating tile view of rank 1-4, a floating
// output; same_shape: the output has input 0's shape.
void require_row_operands(const NodeInfo&, size_t inputs, bool same_shape);
struct PageRowTile {
  RowTile tile;
  Box box;  // (b, d, r0.., 0..C)
};
PageRowTile page_row_tile(const NodeInfo&, int64_t i);
// [Note: balanced row tiles] Tiles per (b, d) plane for tiles of at most `n` rows: ceil(r / n), raised
// (by at most an eighth) to make all planes' tiles a multiple of `num_sms` when there are at least that
// many. With every SM given the same number of instructions whose rows differ by at most one, the last
// wave ends together instead of a third of the SMs running one instruction more (16384 x 8192 RMSNorm:
// 2731 six-row tiles, 21 on 91 SMs and 20 on 41, against 2772 tiles of 5-6 rows, 21 on each).
int64_t balanced_tiles_per_plane(const Coord4& shape, int64_t n, int64_t num_sms);
// Tile i (row-major over (b, d, tile)) of `tiles` per plane: rows [floor(t r / tiles), floor((t+1) r / tiles)).
RowTile balanced_row_tile(const Coord4& shape, int64_t tiles, int64_t i);

}  // namespace mk
