// CPU reference semantics of Gemm (docs/itypes.md): D rows = A rows @ B panel (+ bias), accumulated over
// all K in fp32 (+ bias, then the act) and rounded to bf16 once on store; swiglu: silu(A @ B) * (A @ B2)
// in fp32, one rounding; rope: the rotary embedding of each head's columns, in fp32 after the bias.
// Transposed operands are loaded as the backing box they occupy and transposed here. rms_in: [Note: gemm rms_in]
// (kernels/mk/itypes/gemm.cuh), summed in column order here.
#include "itypes/gemm.h"
#include "itypes/elementwise.h"

#include <cmath>

#include "reference/exec.h"
#include "reference/memory.h"
#include "schedule/instruction.h"

namespace mk {

namespace {
// The backing box of `rows` x `cols` at origin o (extents on the backing's last two dims).
Box tile_box(const int32_t* o, int64_t rows, int64_t cols) {
  return {{o[0], o[1], o[2], o[3]}, {o[0] + 1, o[1] + 1, o[2] + rows, o[3] + cols}};
}
}  // namespace

void Gemm::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t* a0 = in.indices;
  const int32_t* b0 = in.indices + 4;
  const int32_t* d0 = in.indices + 8;
  const int64_t m_rows = in.indices[12] & 0xffff, n_cols = in.indices[13], K = in.indices[14];  // bit 16: pair
  // A rank past M computes nothing: it only runs to keep its cluster in lockstep.
  if (m_rows <= 0 || n_cols <= 0) return;
  // a[m * K + k] and b[k * n_cols + n], whichever way the backing holds them.
  std::vector<float> a = ctx.load(in.src_slot(0), flags_.transpose_a ? tile_box(a0, K, m_rows) : tile_box(a0, m_rows, K));
  if (flags_.transpose_a) {  // backing box is K x m_rows
    std::vector<float> t(a.size());
    for (int64_t k = 0; k < K; ++k)
      for (int64_t m = 0; m < m_rows; ++m) t[m * K + k] = a[k * m_rows + m];
    a.swap(t);
  }
  // A @ (the B panel of slot `src`, at B's origin): fp32 accumulation, as the tensor cores do; m-k-n
  // order so the inner loop runs along rows of B and D.
  const auto product = [&](int src) {
    std::vector<float> b = ctx.load(in.src_slot(src), flags_.transpose_b ? tile_box(b0, n_cols, K) : tile_box(b0, K, n_cols));
    if (flags_.transpose_b) {  // backing box is n_cols x K
      std::vector<float> t(b.size());
      for (int64_t n = 0; n < n_cols; ++n)
        for (int64_t k = 0; k < K; ++k) t[k * n_cols + n] = b[n * K + k];
      b.swap(t);
    }
    std::vector<float> d(m_rows * n_cols, 0.f);
    for (int64_t m = 0; m < m_rows; ++m) {
      float* drow = d.data() + m * n_cols;
      for (int64_t k = 0; k < K; ++k) {
        const float av = a[m * K + k];
        const float* brow = b.data() + k * n_cols;
        for (int64_t n = 0; n < n_cols; ++n) drow[n] += av * brow[n];
      }
    }
    return d;
  };
  // rms_in ([Note: gemm rms_in]): row m of the accumulators times rsqrt(sum_k x[m, k]^2 / K + eps), before
  // anything else, A rounded as bf16(x * w).
  std::vector<float> row_scale;
  if (flags_.rms_in) {
    const float eps = static_cast<float>(*flags_.rms_in);  // a constant of the icode (GemmT's RMS_EPS)
    const int32_t wo[4] = {0, 0, 0, 0};
    const std::vector<float> w = ctx.load(in.src_slot(rms_w_input()), tile_box(wo, 1, K));
    for (int64_t m = 0; m < m_rows; ++m) {
      float sum = 0.f;
      for (int64_t k = 0; k < K; ++k) {
        float& x = a[m * K + k];
        sum += x * x;
        x = bf16_to_float(float_to_bf16(x * w[k]));
      }
      row_scale.push_back(1.f / std::sqrt(sum / static_cast<float>(K) + eps));
    }
  }
  const auto scaled = [&](std::vector<float> x) {
    if (!row_scale.empty())
      for (int64_t m = 0; m < m_rows; ++m)
        for (int64_t n = 0; n < n_cols; ++n) x[m * n_cols + n] *= row_scale[m];
    return x;
  };
  std::vector<float> d = scaled(product(1));
  if (flags_.swiglu) {  // silu(g) = g / (1 + e^-g) of the fp32 accumulators
    const std::vector<float> u = scaled(product(2));
    for (size_t i = 0; i < d.size(); ++i) d[i] = d[i] / (1.f + std::exp(-d[i])) * u[i];
  }
  if (flags_.bias != Bias::none) {
    // Fused epilogue: the bias joins the fp32 accumulator before the one rounding (as cuBLAS addmm).
    const int slot = in.src_slot(2);
    const Coord4 s = ctx.meta(slot).padded();
    int64_t off = in.indices[15];
    int32_t o[4];
    for (int k = 3; k >= 0; --k) o[k] = static_cast<int32_t>(off % s[k]), off /= s[k];
    const bool row = flags_.bias == Bias::row;
    const std::vector<float> c = ctx.load(slot, tile_box(o, row ? 1 : m_rows, n_cols));
    for (int64_t m = 0; m < m_rows; ++m)
      for (int64_t n = 0; n < n_cols; ++n) d[m * n_cols + n] += c[(row ? 0 : m * n_cols) + n];
  }
  if (flags_.rope != 0) {  // rotate_half of each head's columns, with table row m % T (the tile holds whole heads)
    const int64_t D = flags_.rope, h = D / 2, n0 = d0[3];
    const int k = rope_input();
    const Coord4 ts = ctx.meta(in.src_slot(k)).padded();
    const int64_t T = ts[0] * ts[1] * ts[2];
    const std::vector<float> cs = ctx.load(in.src_slot(k), Box::of_shape(ts));
    const std::vector<float> sn = ctx.load(in.src_slot(k + 1), Box::of_shape(ts));
    std::vector<float> y(d.size());
    for (int64_t m = 0; m < m_rows; ++m) {
      const int64_t t = (d0[2] + m) % T * D;
      for (int64_t n = 0; n < n_cols; ++n) {
        const int64_t c = (n0 + n) % D;
        const float x = d[m * n_cols + n], rot = c < h ? -d[m * n_cols + n + h] : d[m * n_cols + n - h];
        y[m * n_cols + n] = x * cs[t + c] + rot * sn[t + c];
      }
    }
    d.swap(y);
  }
  if (!flags_.act.empty()) {  // the folded activation, in fp32 before the rounding
    const UnaryStep act = UnaryStep::parse(flags_.act);
    for (float& x : d) x = act.apply(x);
  }
  ctx.store(in.dst_slot(0), tile_box(d0, m_rows, n_cols), d);
}

}  // namespace mk
