// Tensors as the compiler sees them: dtype + shape metadata, 4-D boxes, and views as ranges on a
// backing tensor. See docs/ir.md, [Note: 4-D tile coords].
#pragma once
#include <array>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

namespace mk {

enum class DType : uint8_t { bf16, f16, f32, i64, i32, b8 };
const char* dtype_name(DType);       // "bfloat16", ... (torch spelling without "torch.")
DType dtype_from_name(const std::string&);  // throws CompileError on an unknown name
int dtype_size(DType);

constexpr int kMaxRank = 4;
using Coord4 = std::array<int64_t, 4>;

// dtype, shape (rank <= 4) and device of a contiguous tensor (seed §02).
struct TensorMeta {
  DType dtype = DType::bf16;
  std::vector<int64_t> shape;
  std::string device = "cpu";

  Coord4 padded() const;           // shape left-padded with 1s to 4-D
  int64_t numel() const;
  int64_t nbytes() const { return numel() * dtype_size(dtype); }
  std::string str() const;         // "bfloat16[1024, 1024]@cpu"
  bool operator==(const TensorMeta&) const = default;
};

// Half-open 4-D box [lo, hi) in padded coordinates.
struct Box {
  Coord4 lo{0, 0, 0, 0}, hi{0, 0, 0, 0};
  static Box of_shape(const Coord4& shape) { return {{0, 0, 0, 0}, shape}; }
  int64_t extent(int d) const { return hi[d] - lo[d]; }
  int64_t volume() const;
  bool empty() const { return volume() == 0; }
  bool intersects(const Box&) const;
  bool contains(const Box&) const;
  std::string str() const;         // "((0,1),(1,2),(0,1024),(0,1024))"
  bool operator==(const Box&) const = default;
  auto operator<=>(const Box&) const = default;
};

// A view on a backing tensor, as produced by folding select/slice/permute chains (seed §02 step 4):
// `box` is the absolute half-open range on the backing tensor's padded shape, and view_dim[i]
// says which backing dim the view's padded dim i runs along (-1: a leading padding dim of size 1).
// Backing dims no view dim runs along have extent 1 in `box` (selected or padding dims).
// Example: W[1] on W (3,1024,1024): box ((0,1),(1,2),(0,1024),(0,1024)), view shape (1024,1024),
// view_dim {-1,-1,2,3}; W[1].t() has the same box and view_dim {-1,-1,3,2} (view rows run along the
// backing's columns). Permutes only reorder view_dim and view_shape: the box never changes.
struct TensorRange {
  // A reshape (view/_unsafe_view/unsqueeze/squeeze) reinterprets one contiguous run of the producer's
  // tensor with a new shape: the run starts at element `offset`, and `box`/`view_dim` are then on
  // `shape`, not on the producer's shape. The scheduler gives each distinct alias its own tensor slot
  // over the same memory. [Note: reshape aliases]
  struct Alias {
    int64_t offset = 0;
    std::vector<int64_t> shape;
    bool operator==(const Alias&) const = default;
  };

  Box box;
  std::array<int8_t, 4> view_dim{0, 1, 2, 3};
  std::vector<int64_t> view_shape;   // unpadded shape the consumer sees
  std::optional<Alias> alias;        // none: `box` is on the producer's own tensor
  // [Note: broadcast views] bcast[i]: padded view dim i is a broadcast (aten.expand of a size-1 dim):
  // it has the expanded extent in view_shape but reads one backing element (the box has extent 1 along
  // its backing dim, if any), so to_backing maps every coordinate in it to that single index.
  std::array<bool, 4> bcast{false, false, false, false};

  static TensorRange full(const std::vector<int64_t>& shape);
  // The whole backing tensor, seen with its own shape and layout (every view dim wider than 1 runs
  // along the backing dim of the same padded index: no transposition).
  bool is_full(const Coord4& backing_padded) const;
  // Every view dim wider than 1 runs along the backing dim of the same padded index (and none of
  // them is a broadcast).
  bool is_straight() const;
  // Some view dim wider than 1 is a broadcast (the view repeats backing elements).
  bool has_broadcast() const;
  Coord4 view_padded() const;        // view_shape left-padded to 4-D
  Box to_backing(const Box& view_box) const;      // a box in view coords -> backing coords
  Coord4 to_backing(const Coord4& view_point) const;
  // Apply aten.select.int(dim, index) / aten.slice.Tensor(dim, start, end) to this view.
  // `dim` may be negative; start/end are clamped like Python slicing. Throws CompileError on a bad
  // dim or index (the caller adds the node name).
  TensorRange select(int64_t dim, int64_t index) const;
  TensorRange slice(int64_t dim, int64_t start, int64_t end) const;
  // aten.permute.default(dims): view dim i becomes old view dim dims[i] (negative dims allowed).
  // Throws CompileError unless dims is a permutation of the view's dims.
  TensorRange permute(const std::vector<int64_t>& dims) const;
  // aten.transpose.int(dim0, dim1): swaps two view dims (a permute).
  TensorRange transpose(int64_t dim0, int64_t dim1) const;
  // aten.expand.default(size), torch semantics: `size` is right-aligned with the view (new leading dims
  // allowed, rank <= 4); -1 keeps a dim; a size-1 dim may grow (it becomes a broadcast dim). Throws
  // CompileError naming both shapes otherwise.
  TensorRange expand(const std::vector<int64_t>& size) const;
  // Whether the viewed elements are one contiguous run, in view order, of the tensor the box is on
  // (`producer`, or the alias): what a reshape needs to stay a view.
  bool contiguous_run(const std::vector<int64_t>& producer) const;
  // Whether the view reads all of `producer` (directly, or through a reshape of all of it) as one contiguous
  // run in row-major order, any shape: what a fusion pass needs to read the same tensor another way.
  bool whole_run(const TensorMeta& producer) const;
  // A reshape to `shape` (one -1 is inferred) of this view on a producer tensor of shape `producer`.
  // The viewed elements must be one contiguous run in memory (never a broadcast view); throws
  // CompileError otherwise (the tracer copies such a view first, [Note: view copies]).
  TensorRange reshape(const std::vector<int64_t>& shape, const std::vector<int64_t>& producer) const;
  // The tensor the box is on: `producer` itself, or the alias (dtype and device of `producer`).
  TensorMeta backing(const TensorMeta& producer) const;
  // "<box> view[1024,64]", plus " on backing dims [-1,-1,3,2]" when permuted and " broadcast along
  // view dims [0]" for broadcast dims.
  std::string str() const;
  bool operator==(const TensorRange&) const = default;

  // The view as torch.as_strided arguments on a contiguous backing tensor of padded shape `backing`:
  // element offset, sizes (= view_shape) and strides, in elements (0 along broadcast dims).
  struct Strided {
    int64_t offset = 0;
    std::vector<int64_t> sizes, strides;
  };
  Strided strided(const Coord4& backing) const;
};

}  // namespace mk
