#include "itypes/itype.h"

#include <algorithm>
#include <cctype>

#include "ir/error.h"

namespace mk {

std::string IType::str() const {
  const std::string p = params();
  return p.empty() ? name() : name() + "(" + p + ")";
}

std::string IType::op_name() const {
  const std::string n = name();
  std::string out;
  auto upper = [&](size_t k) { return k < n.size() && std::isupper(static_cast<unsigned char>(n[k])); };
  for (size_t k = 0; k < n.size(); ++k) {
    const char c = n[k];
    if (upper(k)) {
      // A word starts at an upper-case letter after a lower-case one, or at the last capital of an
      // acronym: "RMSNorm" -> "rms_norm", "ElementwiseUnary" -> "elementwise_unary".
      if (k && (!upper(k - 1) || (k + 1 < n.size() && !upper(k + 1)))) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

void require_rank(const NodeInfo& n, const char* what, const std::vector<int64_t>& shape, int lo, int hi) {
  const int r = static_cast<int>(shape.size());
  if (r < lo || r > hi)
    fail("node '", n.name, "' (", n.target, "): ", what, " must have rank ", lo, "..", hi, ", got rank ", r);
}

void require_dtype(const NodeInfo& n, const char* what, DType got, DType want) {
  if (got == want) return;
  // A float32 model where the tensor-core ITypes take 16-bit floats: say what a user can do about it.
  const char* hint = (want == DType::bf16 || want == DType::f16) && got == DType::f32
                         ? " (cast the model and its inputs with .to(torch.bfloat16) or .to(torch.float16), or "
                           "compile with fallback=\"eager\" to run this op in PyTorch)"
                         : "";
  fail("node '", n.name, "' (", n.target, "): ", what, " must be ", dtype_name(want), ", got ", dtype_name(got), hint);
}

bool is_float(DType d) { return d == DType::bf16 || d == DType::f16 || d == DType::f32; }

void require_float(const NodeInfo& n, const char* what, DType got) {
  if (!is_float(got))
    fail("node '", n.name, "' (", n.target, "): ", what, " must be a floating-point tensor (bfloat16, float16, ",
         "float32), got ", dtype_name(got));
}

bool tile_view(const TensorRange& r) {
  const Coord4 v = r.view_padded();
  for (int k = 2; k < 4; ++k)
    if (v[k] > 1 && r.view_dim[k] != k) return false;
  return !r.has_broadcast();
}

void require_inputs(const NodeInfo& n, size_t k) {
  if (n.inputs.size() != k)
    fail("node '", n.name, "' (", n.target, "): expects ", k, " tensor inputs, got ", n.inputs.size());
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t rows_per_page(int64_t cols, int elem_bytes, const Profile& p) {
  const int64_t row_bytes = std::max<int64_t>(128, ceil_div(cols * elem_bytes, 128) * 128);
  return std::max<int64_t>(1, p.page_bytes / row_bytes);
}

void require_row_operands(const NodeInfo& n, size_t inputs, bool same_shape) {
  require_inputs(n, inputs);
  require_outputs(n, 1);
  const Operand& x = n.inputs[0];
  const TensorMeta& y = n.outputs[0];
  require_rank(n, "input x", x.shape(), 1, 4);
  require_float(n, "input x", x.dtype());
  require_float(n, "output", y.dtype);
  if (same_shape && x.shape() != y.shape)
    fail("node '", n.name, "' (", n.target, "): input x shape ", shape_str(x.shape()), " must equal the output shape ",
         shape_str(y.shape));
  require_tile_view(n, "input x", x);
}

int64_t num_page_row_tiles(const NodeInfo& n) {
  const Coord4 s = n.inputs[0].padded();
  return num_row_tiles(s, rows_per_page(s[3], dtype_size(n.inputs[0].dtype()), n.profile));
}

PageRowTile page_row_tile(const NodeInfo& n, int64_t i) {
  const Coord4 s = n.inputs[0].padded();
  const RowTile t = row_tile(s, rows_per_page(s[3], dtype_size(n.inputs[0].dtype()), n.profile), i);
  const Coord4& o = t.origin;
  return {t, Box{o, {o[0] + 1, o[1] + 1, o[2] + t.rows, s[3]}}};
}

int64_t num_row_tiles(const Coord4& s, int64_t n) { return s[0] * s[1] * ceil_div(s[2], n); }

RowTile row_tile(const Coord4& s, int64_t n, int64_t i) {
  const int64_t nr = ceil_div(s[2], n);
  const int64_t rt = i % nr, d = (i / nr) % s[1], b = i / (nr * s[1]);
  return {{b, d, rt * n, 0}, std::min(n, s[2] - rt * n)};
}

int64_t balanced_tiles_per_plane(const Coord4& s, int64_t n, int64_t num_sms) {
  const int64_t planes = s[0] * s[1], k0 = ceil_div(s[2], n);
  if (num_sms < 1 || planes * k0 < num_sms) return k0;
  for (int64_t k = k0; k <= std::min(s[2], k0 + k0 / 8); ++k)
    if (planes * k % num_sms == 0) return k;
  return k0;
}

RowTile balanced_row_tile(const Coord4& s, int64_t tiles, int64_t i) {
  const int64_t t = i % tiles, d = (i / tiles) % s[1], b = i / (tiles * s[1]);
  const int64_t r0 = t * s[2] / tiles, r1 = (t + 1) * s[2] / tiles;
  return {{b, d, r0, 0}, r1 - r0};
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void require_tile_view(const NodeInfo& n, const char* what, const Operand& op) {
  const Coord4 v = op.padded();
  for (int k = 2; k < 4; ++k)
    if (v[k] > 1 && op.range.view_dim[k] != k)
      fail("node '", n.name, "' (", n.target, "): ", what, " view ", op.range.str(),
           " must keep its last two dims on the backing tensor's last two dims, got view dim ", k,
           " on backing dim ", int(op.range.view_dim[k]));
}

void require_outputs(const NodeInfo& n, size_t k) {
  if (n.outputs.size() != k)
    fail("node '", n.name, "' (", n.target, "): expects ", k, " outputs, got ", n.outputs.size());
}

void push_origin(std::vector<int32_t>& idx, const Coord4& c) {
  for (auto v : c) idx.push_back(static_cast<int32_t>(v));
}

}  // namespace mk
