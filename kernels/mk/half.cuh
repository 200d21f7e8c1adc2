// The 16-bit float of a tensor-core IType: bf16, or fp16 where its F16 template parameter is set (the IType's
// `f16` parameter, src/itypes/itype.h half_dtype). TMA, shared memory, page layouts and wgmma descriptors
// move either type's bits alike; what differs is the wgmma opcode (mk/wgmma.cuh) and the conversions here.
// Conversions to the 16-bit type round to nearest even, as torch's .to() does.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/cstdint>

namespace mk {

template <bool F16>
struct Half;

template <>
struct Half<false> {
  using T = __nv_bfloat16;
  using T2 = __nv_bfloat162;
  static __device__ __forceinline__ T2 pack2(float lo, float hi) { return __floats2bfloat162_rn(lo, hi); }
  static __device__ __forceinline__ float2 unpack2(T2 v) { return __bfloat1622float2(v); }
  static __device__ __forceinline__ T from_float(float x) { return __float2bfloat16_rn(x); }
  static __device__ __forceinline__ float to_float(T x) { return __bfloat162float(x); }
  // An element given as its 16 bits (the low half of `bits`), and the low / high element of a packed pair.
  static __device__ __forceinline__ float bits_to_float(cuda::std::uint32_t bits) { return __uint_as_float(bits << 16); }
  static __device__ __forceinline__ float lo(cuda::std::uint32_t w) { return __uint_as_float(w << 16); }
  static __device__ __forceinline__ float hi(cuda::std::uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
};

template <>
struct Half<true> {
  using T = __half;
  using T2 = __half2;
  static __device__ __forceinline__ T2 pack2(float lo, float hi) { return __floats2half2_rn(lo, hi); }
  static __device__ __forceinline__ float2 unpack2(T2 v) { return __half22float2(v); }
  static __device__ __forceinline__ T from_float(float x) { return __float2half_rn(x); }
  static __device__ __forceinline__ float to_float(T x) { return __half2float(x); }
  static __device__ __forceinline__ float bits_to_float(cuda::std::uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
  static __device__ __forceinline__ float lo(cuda::std::uint32_t w) { return bits_to_float(w & 0xffffu); }
  static __device__ __forceinline__ float hi(cuda::std::uint32_t w) { return bits_to_float(w >> 16); }
};

// A packed pair as the 32 bits a register operand or a 4-byte store takes.
template <bool F16>
__device__ __forceinline__ cuda::std::uint32_t pack2_bits(float lo, float hi) {
  const typename Half<F16>::T2 v = Half<F16>::pack2(lo, hi);
  return *reinterpret_cast<const cuda::std::uint32_t*>(&v);
}

}  // namespace mk
