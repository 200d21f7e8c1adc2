// CPU reference semantics of Gemm (docs/itypes.md): D rows = A rows @ B panel, accumulated over all K.
#include "itypes/gemm.h"

#include "reference/exec.h"
#include "schedule/instruction.h"

namespace mk {

void Gemm::execute(const Instruction& in, ExecContext& ctx) const {
  const int32_t* a0 = in.indices;
  const int32_t* b0 = in.indices + 4;
  const int32_t* d0 = in.indices + 8;
  const int64_t m_rows = in.indices[12], n_cols = in.indices[13], K = in.indices[14];
  // A rank past M computes nothing: it only runs to keep its cluster in lockstep.
  if (m_rows <= 0 || n_cols <= 0) return;
  const std::vector<float> a =
      ctx.load(in.src_tensors[0], {{a0[0], a0[1], a0[2], a0[3]}, {a0[0] + 1, a0[1] + 1, a0[2] + m_rows, a0[3] + K}});
  const std::vector<float> b =
      ctx.load(in.src_tensors[1], {{b0[0], b0[1], b0[2], b0[3]}, {b0[0] + 1, b0[1] + 1, b0[2] + K, b0[3] + n_cols}});
  // fp32 accumulation, as the tensor cores do; m-k-n order so the inner loop runs along rows of B and D.
  std::vector<float> d(m_rows * n_cols, 0.f);
  for (int64_t m = 0; m < m_rows; ++m) {
    float* drow = d.data() + m * n_cols;
    for (int64_t k = 0; k < K; ++k) {
      const float av = a[m * K + k];
      const float* brow = b.data() + k * n_cols;
      for (int64_t n = 0; n < n_cols; ++n) drow[n] += av * brow[n];
    }
  }
  ctx.store(in.dst_tensors[0], {{d0[0], d0[1], d0[2], d0[3]}, {d0[0] + 1, d0[1] + 1, d0[2] + m_rows, d0[3] + n_cols}},
            d);
}

}  // namespace mk
