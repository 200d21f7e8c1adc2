// wgmma.mma_async wrappers (sm_90a): D(64 x N, fp32 registers) (+)= A(64 x 16) * B(16 x N), A and B bf16, or
// fp16 with F16, for N = 64, 128 and 256 (both operands in shared memory: _ss, or A in registers: _rs,
// FlashAttention's P operand, the Gemm's rms_in A). One warpgroup-collective instruction; scale_d = 0
// overwrites D, 1 accumulates. d[4i + e] is row 16*warp + lane/4 + 8*(e/2), column 8i + 2*(lane%4) + e%2 of
// the warpgroup's 64 x N tile.
// Transpose immediates chosen at compile time (Gemm flags): TransA = 0 for a K-major A (row-major (M, K)
// tile), 1 for an M-major A (row-major (K, M) tile, `ta`); TransB = 1 for an N-major B (row-major (K, N)
// tile), 0 for a K-major B (row-major (N, K) tile, `tb`).
//
// [Note: wgmma register A] the A fragment of one k16 step (64 x 16 16-bit floats, four .b32 registers per
// thread) has the accumulator's layout restricted to 16 columns: a0 = row r, columns 2(lane%4) + {0,1};
// a1 = row r + 8, same columns; a2, a3 = the same rows at columns + 8 (r = 16*warp + lane/4; the lower
// half of each register holds the lower column). So the fp32 accumulator d of a 64 x N product turns
// into the A operand of k16 step t as a_j = pack(d[8t + 2j], d[8t + 2j + 1]), j < 4, with no shuffles.
//
// The two input types differ in the opcode's type suffix only: each statement is a macro of it (TY).
#pragma once
#include "mk/ptx.cuh"

// Operands %0 .. %31: the accumulators d[0 .. 32).
#define MK_WGMMA_R32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
// Operands %0 .. %63: the accumulators d[0 .. 64).
#define MK_WGMMA_R64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
// Operands %0 .. %127: the accumulators d[0 .. 128).
#define MK_WGMMA_R128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define MK_WGMMA_D32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define MK_WGMMA_D64 \
  MK_WGMMA_D32, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define MK_WGMMA_D128 \
  MK_WGMMA_D64, \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define MK_WGMMA_SS_N64(TY)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " MK_WGMMA_R32          \
               ", %32, %33, p, 1, 1, %35, %36;\n}\n"                                       \
               : MK_WGMMA_D32                                                             \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))
#define MK_WGMMA_SS_N128(TY)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " MK_WGMMA_R64          \
               ", %64, %65, p, 1, 1, %67, %68;\n}\n"                                       \
               : MK_WGMMA_D64                                                             \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))
#define MK_WGMMA_SS_N256(TY)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " " MK_WGMMA_R128          \
               ", %128, %129, p, 1, 1, %131, %132;\n}\n"                                       \
               : MK_WGMMA_D128                                                             \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))
#define MK_WGMMA_RS_N64(TY)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " MK_WGMMA_R32          \
               ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"                      \
               : MK_WGMMA_D32                                                             \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(scale_d), "n"(TransB))
#define MK_WGMMA_RS_N128(TY)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " MK_WGMMA_R64          \
               ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"                      \
               : MK_WGMMA_D64                                                             \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(scale_d), "n"(TransB))
#define MK_WGMMA_RS_N256(TY)                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " " MK_WGMMA_R128          \
               ", {%128, %129, %130, %131}, %132, p, 1, 1, %134;\n}\n"                      \
               : MK_WGMMA_D128                                                             \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(scale_d), "n"(TransB))

namespace mk::ptx {

template <int TransA, int TransB, bool F16 = false>
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], u64 desc_a, u64 desc_b, int scale_d) {
  if constexpr (F16) MK_WGMMA_SS_N64("f16");
  else MK_WGMMA_SS_N64("bf16");
}

template <int TransA, int TransB, bool F16 = false>
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], u64 desc_a, u64 desc_b, int scale_d) {
  if constexpr (F16) MK_WGMMA_SS_N128("f16");
  else MK_WGMMA_SS_N128("bf16");
}

template <int TransA, int TransB, bool F16 = false>
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[128], u64 desc_a, u64 desc_b, int scale_d) {
  if constexpr (F16) MK_WGMMA_SS_N256("f16");
  else MK_WGMMA_SS_N256("bf16");
}

template <int TransB, bool F16 = false>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], u32 a0, u32 a1, u32 a2, u32 a3, u64 desc_b,
                                                   int scale_d) {
  if constexpr (F16) MK_WGMMA_RS_N64("f16");
  else MK_WGMMA_RS_N64("bf16");
}

template <int TransB, bool F16 = false>
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], u32 a0, u32 a1, u32 a2, u32 a3, u64 desc_b,
                                                   int scale_d) {
  if constexpr (F16) MK_WGMMA_RS_N128("f16");
  else MK_WGMMA_RS_N128("bf16");
}

template <int TransB, bool F16 = false>
__device__ __forceinline__ void wgmma_m64n256k16_rs(float (&d)[128], u32 a0, u32 a1, u32 a2, u32 a3, u64 desc_b,
                                                    int scale_d) {
  if constexpr (F16) MK_WGMMA_RS_N256("f16");
  else MK_WGMMA_RS_N256("bf16");
}

}  // namespace mk::ptx

#undef MK_WGMMA_R32
#undef MK_WGMMA_R64
#undef MK_WGMMA_R128
#undef MK_WGMMA_D32
#undef MK_WGMMA_D64
#undef MK_WGMMA_D128
#undef MK_WGMMA_SS_N64
#undef MK_WGMMA_SS_N128
#undef MK_WGMMA_SS_N256
#undef MK_WGMMA_RS_N64
#undef MK_WGMMA_RS_N128
#undef MK_WGMMA_RS_N256
