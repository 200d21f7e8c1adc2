// The fp32 unary functions shared by ElementwiseUnary and the Gemm epilogue's activation (`act`):
// one body per host UnaryStep op (src/itypes/elementwise.h), matching the CPU reference.
#pragma once

namespace mk {

// Names as the host's UnaryStep (src/itypes/elementwise.h): codegen emits mk::Unary::<host op name>.
enum class Unary {
  identity, relu, abs, exp, exp2, log, log2, neg, sqrt, rsqrt,
  silu, gelu, gelu_tanh, sigmoid, tanh, cos, sin, reciprocal, square, erf, expm1, log1p,
  add_scalar, mul_scalar, div_scalar, pow_scalar, clamp_min, clamp_max,  // read a constant k
};

template <Unary U>
inline constexpr bool kUnaryHasK = U >= Unary::add_scalar;

// sqrtf's result (IEEE, correctly rounded) without its call to a slow path, which splits a fused step
// list into basic blocks and serialises its elements (timeline of chain20: 22 us of compute). sqrtf's own
// fast path for x >= 2^-101 (rsqrt estimate, one Newton step); a smaller x is scaled by 2^64 into that
// range (exact) and the root back by 2^-32; 0 and inf are themselves, negatives and NaN give NaN.
__device__ __forceinline__ float sqrt_rn(float x) {
  const bool tiny = x < 0x1p-101f;
  const float xs = tiny ? x * 0x1p+64f : x;
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(xs));
  const float s = xs * y, e = fmaf(-s, s, xs);
  float r = fmaf(e, 0.5f * y, s);
  if (tiny) r *= 0x1p-32f;
  return (x == 0.f || x == __int_as_float(0x7f800000)) ? x : r;
}

// fp32, the host reference's functions (accurate ones where it matters: erff, tanhf, sinf, cosf, powf, expm1f,
// log1pf).
template <Unary U>
__device__ __forceinline__ float unary(float x, float k = 0.f) {
  if constexpr (U == Unary::identity) return x;
  else if constexpr (U == Unary::relu) return x < 0.f ? 0.f : x;  // keeps NaN, as torch.relu
  else if constexpr (U == Unary::abs) return fabsf(x);
  else if constexpr (U == Unary::exp) return __expf(x);
  else if constexpr (U == Unary::exp2) return exp2f(x);
  else if constexpr (U == Unary::log) return __logf(x);
  else if constexpr (U == Unary::log2) return log2f(x);
  else if constexpr (U == Unary::neg) return -x;
  else if constexpr (U == Unary::sqrt) return sqrt_rn(x);
  else if constexpr (U == Unary::rsqrt) return rsqrtf(x);
  // x / (1 + e^-x) through the approximate reciprocal (2 ulp; 0 once e^-x overflows): IEEE division's
  // slow path made the swiglu Gemm's epilogue ~5.5 us (H200, benchmarks/notes.md Session 19).
  else if constexpr (U == Unary::silu) return x * __fdividef(1.f, 1.f + __expf(-x));
  else if constexpr (U == Unary::gelu) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  else if constexpr (U == Unary::gelu_tanh) {
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2/pi)
    return 0.5f * x * (1.f + tanhf(inner));
  }
  else if constexpr (U == Unary::sigmoid) return __frcp_rn(1.f + __expf(-x));
  else if constexpr (U == Unary::tanh) return tanhf(x);
  else if constexpr (U == Unary::cos) return cosf(x);
  else if constexpr (U == Unary::sin) return sinf(x);
  else if constexpr (U == Unary::reciprocal) return __frcp_rn(x);
  else if constexpr (U == Unary::square) return x * x;
  else if constexpr (U == Unary::erf) return erff(x);
  else if constexpr (U == Unary::expm1) return expm1f(x);  // accurate near 0, where exp(x) - 1 cancels
  else if constexpr (U == Unary::log1p) return log1pf(x);
  else if constexpr (U == Unary::add_scalar) return x + k;
  else if constexpr (U == Unary::mul_scalar) return x * k;
  else if constexpr (U == Unary::div_scalar) return __fdiv_rn(x, k);  // exact, as eager x / k
  else if constexpr (U == Unary::pow_scalar) return powf(x, k);
  else if constexpr (U == Unary::clamp_min) return x < k || k != k ? k : x;  // a NaN x or bound: NaN, as torch
  else if constexpr (U == Unary::clamp_max) return x > k || k != k ? k : x;
  else static_assert(U == Unary::identity, "mk::unary: an mk::Unary without a body");
}

}  // namespace mk
