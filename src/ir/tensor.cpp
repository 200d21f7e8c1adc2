#include "ir/tensor.h"

#include <algorithm>
#include "ir/strings.h"

#include "ir/error.h"

namespace mk {

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  int size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::bf16, "bfloat16", 2}, {DType::f16, "float16", 2}, {DType::f32, "float32", 4},
    {DType::i64, "int64", 8},     {DType::i32, "int32", 4},   {DType::b8, "bool", 1},
};
}  // namespace

const char* dtype_name(DType d) { return kDTypes[static_cast<int>(d)].name; }
int dtype_size(DType d) { return kDTypes[static_cast<int>(d)].size; }
DType dtype_from_name(const std::string& name) {
  std::string n = name.rfind("torch.", 0) == 0 ? name.substr(6) : name;
  for (const auto& info : kDTypes)
    if (n == info.name) return info.dtype;
  fail("unsupported dtype '", name, "': megakittens tensors are one of bfloat16, float16, float32, int64, int32, bool");
}

Coord4 TensorMeta::padded() const {
  Coord4 p{1, 1, 1, 1};
  const size_t r = shape.size();
  for (size_t i = 0; i < r && i < 4; ++i) p[4 - r + i] = shape[i];
  return p;
}
int64_t TensorMeta::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}
std::string TensorMeta::str() const {
  StrBuf os;
  os << dtype_name(dtype) << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]@" << device;
  return os.str();
}

int64_t Box::volume() const {
  int64_t v = 1;
  for (int d = 0; d < 4; ++d) v *= std::max<int64_t>(0, hi[d] - lo[d]);
  return v;
}
bool Box::intersects(const Box& o) const {
  for (int d = 0; d < 4; ++d)
    if (std::max(lo[d], o.lo[d]) >= std::min(hi[d], o.hi[d])) return false;
  return true;
}
bool Box::contains(const Box& o) const {
  for (int d = 0; d < 4; ++d)
    if (o.lo[d] < lo[d] || o.hi[d] > hi[d]) return false;
  return true;
}
std::string Box::str() const {
  StrBuf os;
  os << "(";
  for (int d = 0; d < 4; ++d) os << (d ? "," : "") << "(" << lo[d] << "," << hi[d] << ")";
  os << ")";
  return os.str();
}

TensorRange TensorRange::full(const std::vector<int64_t>& shape) {
  TensorRange r;
  r.view_shape = shape;
  TensorMeta m;
  m.shape = shape;
  r.box = Box::of_shape(m.padded());
  const int pad = 4 - static_cast<int>(shape.size());
  for (int i = 0; i < 4; ++i) r.view_dim[i] = static_cast<int8_t>(i < pad ? -1 : i);
  return r;
}

bool TensorRange::is_full(const Coord4& backing) const {
  return box == Box::of_shape(backing) && view_padded() == backing && is_straight();
}

bool TensorRange::is_straight() const {
  const Coord4 v = view_padded();
  for (int i = 0; i < 4; ++i)
    if (v[i] > 1 && (view_dim[i] != i || bcast[i])) return false;
  return true;
}

bool TensorRange::has_broadcast() const {
  const Coord4 v = view_padded();
  for (int i = 0; i < 4; ++i)
    if (v[i] > 1 && bcast[i]) return true;
  return false;
}

Coord4 TensorRange::view_padded() const {
  TensorMeta m;
  m.shape = view_shape;
  return m.padded();
}

Coord4 TensorRange::to_backing(const Coord4& p) const {
  Coord4 out = box.lo;
  for (int i = 0; i < 4; ++i)
    if (view_dim[i] >= 0 && !bcast[i]) out[view_dim[i]] += p[i];  // a broadcast dim reads index box.lo
  return out;
}

Box TensorRange::to_backing(const Box& v) const {
  Box out = box;
  for (int d = 0; d < 4; ++d) out.hi[d] = out.lo[d] + 1;  // dims no view dim runs along
  for (int i = 0; i < 4; ++i) {
    const int b = view_dim[i];
    if (b < 0 || bcast[i]) continue;  // broadcast: the single backing element, extent 1
    out.lo[b] = box.lo[b] + v.lo[i];
    out.hi[b] = box.lo[b] + v.hi[i];
  }
  return out;
}

namespace {
std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Index into view_dim of the unpadded view dim `dim` (negative allowed).
int view_slot(const TensorRange& r, int64_t dim, const char* op) {
  const int64_t rank = static_cast<int64_t>(r.view_shape.size());
  if (dim < -rank || dim >= rank) fail(op, ": dim ", dim, " is out of range for a rank-", rank, " view");
  if (dim < 0) dim += rank;
  return static_cast<int>(4 - rank + dim);
}
}  // namespace

TensorRange TensorRange::select(int64_t dim, int64_t index) const {
  const int rank = static_cast<int>(view_shape.size());
  const int slot = view_slot(*this, dim, "select");
  const int64_t udim = slot - (4 - rank);
  const int64_t size = view_shape[udim];
  if (index < -size || index >= size)
    fail("select: index ", index, " is out of range for dim ", dim, " of size ", size);
  if (index < 0) index += size;
  TensorRange r = *this;
  const int b = view_dim[slot];
  if (b >= 0 && !bcast[slot]) {  // selecting in a broadcast dim keeps the single backing element
    r.box.lo[b] += index;
    r.box.hi[b] = r.box.lo[b] + 1;
  }
  // Remove the view dim: shift the dims in front of it one place right, pad the front.
  for (int i = slot; i > 0; --i) r.view_dim[i] = view_dim[i - 1], r.bcast[i] = bcast[i - 1];
  r.view_dim[0] = -1;
  r.bcast[0] = false;
  r.view_shape.erase(r.view_shape.begin() + udim);
  return r;
}

TensorRange TensorRange::slice(int64_t dim, int64_t start, int64_t end) const {
  const int rank = static_cast<int>(view_shape.size());
  const int slot = view_slot(*this, dim, "slice");
  const int64_t udim = slot - (4 - rank);
  const int64_t size = view_shape[udim];
  auto clamp = [size](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  start = clamp(start);
  end = std::max(start, clamp(end));
  TensorRange r = *this;
  const int b = view_dim[slot];
  if (!bcast[slot]) {  // a broadcast dim keeps its single backing element
    r.box.lo[b] = box.lo[b] + start;
    r.box.hi[b] = box.lo[b] + end;
  }
  r.view_shape[udim] = end - start;
  return r;
}

TensorRange TensorRange::permute(const std::vector<int64_t>& dims) const {
  const int rank = static_cast<int>(view_shape.size());
  auto dims_str = [&] {
    std::string s = "[";
    for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
    return s + "]";
  };
  if (static_cast<int>(dims.size()) != rank)
    fail("permute: dims ", dims_str(), " must name each of the ", rank, " dims of the view once");
  std::array<bool, 4> seen{};
  TensorRange r = *this;
  for (int i = 0; i < rank; ++i) {
    const int slot = view_slot(*this, dims[i], "permute");
    const int64_t udim = slot - (4 - rank);
    if (seen[udim]) fail("permute: dims ", dims_str(), " repeat dim ", udim, " (not a permutation)");
    seen[udim] = true;
    r.view_dim[4 - rank + i] = view_dim[slot];
    r.bcast[4 - rank + i] = bcast[slot];
    r.view_shape[i] = view_shape[udim];
  }
  return r;
}

TensorRange TensorRange::transpose(int64_t dim0, int64_t dim1) const {
  const int rank = static_cast<int>(view_shape.size());
  const int s0 = view_slot(*this, dim0, "transpose"), s1 = view_slot(*this, dim1, "transpose");
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) dims[i] = i;
  std::swap(dims[s0 - (4 - rank)], dims[s1 - (4 - rank)]);
  return permute(dims);
}

TensorRange TensorRange::expand(const std::vector<int64_t>& size) const {
  const int rank = static_cast<int>(view_shape.size()), nrank = static_cast<int>(size.size());
  auto bad = [&](const std::string& why) {
    fail("expand: cannot expand a ", shape_text(view_shape), " view to ", shape_text(size), ": ", why);
  };
  if (nrank > kMaxRank) bad("rank > 4");
  if (nrank < rank) bad("the new shape has fewer dims than the view");
  TensorRange r = *this;
  r.view_shape.assign(size.begin(), size.end());
  for (int j = 0; j < nrank; ++j) {
    const int slot = 4 - nrank + j;           // the padded view dim (same slot before and after)
    const int old = j - (nrank - rank);       // the unpadded old dim, < 0 for a new leading dim
    const int64_t have = old >= 0 ? view_shape[old] : 1;
    int64_t want = size[j];
    if (want == -1) {
      if (old < 0) bad("-1 is not allowed for a new leading dim " + std::to_string(j));
      want = have;
    }
    if (want < 0) bad("negative size " + std::to_string(want) + " in dim " + std::to_string(j));
    r.view_shape[j] = want;
    if (want == have) continue;
    if (have != 1)
      bad("dim " + std::to_string(j) + " has size " + std::to_string(have) + " (only size-1 dims broadcast)");
    r.bcast[slot] = true;  // the new leading dims were padding: view_dim -1, box extent 1
  }
  return r;
}

TensorMeta TensorRange::backing(const TensorMeta& producer) const {
  if (!alias) return producer;
  TensorMeta m = producer;
  m.shape = alias->shape;
  return m;
}

bool TensorRange::whole_run(const TensorMeta& producer) const {
  if (alias && alias->offset != 0) return false;
  const TensorMeta b = backing(producer);
  return b.numel() == producer.numel() && !has_broadcast() && box == Box::of_shape(b.padded()) &&
         contiguous_run(producer.shape);
}

bool TensorRange::contiguous_run(const std::vector<int64_t>& producer) const {
  TensorMeta base;
  base.shape = alias ? alias->shape : producer;
  const Coord4 b = base.padded();
  // The viewed elements are one contiguous run iff the view is straight, and after the first box
  // dim wider than 1 every dim is whole.
  if (!is_straight()) return false;
  bool wide = false;
  for (int d = 0; d < 4; ++d) {
    if (wide && (box.lo[d] != 0 || box.hi[d] != b[d])) return false;
    wide |= box.extent(d) > 1;
  }
  return true;
}

TensorRange TensorRange::reshape(const std::vector<int64_t>& shape, const std::vector<int64_t>& producer) const {
  TensorMeta base;
  base.shape = alias ? alias->shape : producer;
  const Coord4 b = base.padded();
  if (!contiguous_run(producer))
    fail("reshape: the view ", str(), " is not one contiguous run of its tensor ", shape_text(base.shape),
         "; reshaping it needs a copy");
  int64_t numel = box.volume(), known = 1, infer = -1;
  std::vector<int64_t> out = shape;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k] == -1) {
      if (infer >= 0) fail("reshape: at most one -1 in ", shape_text(shape));
      infer = static_cast<int64_t>(k);
    } else {
      known *= out[k];
    }
  }
  if (infer >= 0 && known > 0) out[infer] = numel / known;
  int64_t total = 1;
  for (int64_t v : out) total *= v;
  if (total != numel || out.size() > kMaxRank)
    fail("reshape: cannot view ", numel, " elements as ", shape_text(shape), " (rank <= 4)");
  const Coord4 stride{b[1] * b[2] * b[3], b[2] * b[3], b[3], 1};
  int64_t offset = alias ? alias->offset : 0;
  for (int d = 0; d < 4; ++d) offset += box.lo[d] * stride[d];
  TensorRange r = full(out);
  r.alias = Alias{offset, out};
  return r;
}

TensorRange::Strided TensorRange::strided(const Coord4& backing) const {
  Coord4 stride{0, 0, 0, 1};
  for (int d = 2; d >= 0; --d) stride[d] = stride[d + 1] * backing[d + 1];
  Strided out;
  out.offset = alias ? alias->offset : 0;
  for (int d = 0; d < 4; ++d) out.offset += box.lo[d] * stride[d];
  const int pad = 4 - static_cast<int>(view_shape.size());
  for (size_t i = 0; i < view_shape.size(); ++i) {
    const int b = view_dim[pad + i];
    out.sizes.push_back(view_shape[i]);
    out.strides.push_back(bcast[pad + i] ? 0 : b >= 0 ? stride[b] : 1);
  }
  return out;
}

std::string TensorRange::str() const {
  StrBuf os;
  os << box.str() << " view[";
  for (size_t i = 0; i < view_shape.size(); ++i) os << (i ? "," : "") << view_shape[i];
  os << "]";
  const Coord4 v = view_padded();
  bool permuted = false, broadcast = false;
  for (int i = 0; i < 4; ++i) {
    permuted |= v[i] > 1 && view_dim[i] != i && !bcast[i];
    broadcast |= bcast[i];
  }
  if (permuted) {  // a permuted view: which backing dim each padded view dim runs along
    os << " on backing dims [";
    for (int i = 0; i < 4; ++i) os << (i ? "," : "") << int(view_dim[i]);
    os << "]";
  }
  if (broadcast) {
    os << " broadcast along view dims [";
    const int pad = 4 - static_cast<int>(view_shape.size());
    bool first = true;
    for (int i = 0; i < 4; ++i)
      if (bcast[i]) os << (first ? "" : ",") << i - pad, first = false;
    os << "]";
  }
  if (alias) os << " of the reshape " << shape_text(alias->shape) << " at element " << alias->offset;
  return os.str();
}

}  // namespace mk
