// ElementwiseUnary / ElementwiseBinary / ElementwiseFused as codegen names them: per instruction, the TMA tile body of
// elementwise.cuh when every operand and the output is a bf16 slot with a tile map and nothing
// broadcasts, else plain loads and stores ([Note: SIMT bodies]): fp16/fp32 operands, mixed dtypes,
// broadcast operands, rows that are not 16-byte multiples. The choice reads only the slot table and
// the static parameters, so every role of an instruction takes the same path.
#pragma once
#include "mk/itypes/elementwise.cuh"

namespace mk {

template <class F>
struct ElementwiseSimtBody {
  using E = Elementwise<F>;
  static __device__ void run(Ctx& c, int tid) {
    const i32* idx = c.idx();
    TileView x[F::inputs];
#pragma unroll
    for (int k = 0; k < F::inputs; ++k) {
      const unsigned m = F::bcast(k);  // a broadcast operand's origin is 0 along its broadcast dims
      x[k] = tile_view(c.slot(c.src_slot(k)), idx + 4 * k, (m & 4u) ? -1 : 2, (m & 8u) ? -1 : 3);
    }
    const TileView y = tile_view(c.slot(c.dst_slot(0)), idx + E::kOut, 2, 3);
    tile_map(x, y, idx[E::kRows], idx[E::kCols], tid, false, [](const float (&v)[F::inputs]) { return F::apply(v); });
  }
};

template <class F>
struct ElementwiseAny {
  using Tma = Elementwise<F>;
  using Plain = Simt<ElementwiseSimtBody<F>>;
  static constexpr int num_semaphores = Tma::num_semaphores;
  static __device__ int semaphore_count(int i) { return Tma::semaphore_count(i); }
  // The plain path frees its pages in lid order at once, so any rename order is as good.
  static __device__ int lid_release_order(int q, const i32* inst) { return Tma::lid_release_order(q, inst); }

  static __device__ bool tma(const Ctx& c) {
    for (int k = 0; k < F::inputs; ++k)
      if (F::bcast(k) != 0 || !(c.slot(c.src_slot(k)).flags & 1)) return false;
    return (c.slot(c.dst_slot(0)).flags & 1) != 0;
  }
  static __device__ void load(Ctx& c) { tma(c) ? Tma::load(c) : Plain::load(c); }
  static __device__ void compute(Ctx& c) { tma(c) ? Tma::compute(c) : Plain::compute(c); }
  static __device__ void store(Ctx& c) { tma(c) ? Tma::store(c) : Plain::store(c); }
};

template <Unary... Us>
using ElementwiseUnary = ElementwiseAny<UnaryFn<Us...>>;
template <class... Ss>
using ElementwiseUnaryK = ElementwiseAny<UnaryStepsFn<Ss...>>;
template <class P>
using ElementwiseBinary = ElementwiseAny<BinaryFn<P>>;
// P: the generated function of an ElementwiseFused icode (src/runtime/codegen.cpp): static constexpr int
// inputs, bcast(k), and apply(const float (&x)[inputs]) -> float, one line per step.
template <class P>
using ElementwiseFused = ElementwiseAny<P>;

}  // namespace mk
