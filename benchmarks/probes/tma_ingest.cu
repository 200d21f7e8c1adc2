// How fast can one SM pull data from L2 into shared memory with TMA, and what does the issuing loop cost?
// (benchmarks/notes.md, Session 15)
//
// Each CTA's loader warp keeps `stages` stages in flight, one mbarrier each, and refills a stage as soon as
// it lands (no consumer): the ingest ceiling of a Gemm k-loop with that many bytes in flight and that
// many copies per stage. A stage is `boxes` tensor-map boxes of 64 bf16 columns x `rows` rows (128-byte
// swizzle, the Gemm's A/B boxes: 8 KB at 64 rows). Copies are issued by lane 0 alone, or one per lane
// in one warp instruction. Sources are L2-resident (a 16 MB bf16 matrix, read before).
//   nvcc -std=c++17 -O2 -arch=sm_90a -o tma_ingest tma_ingest.cu && ./tma_ingest
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kRows = 8192, kCols = 1024;  // the source matrix, bf16: 16 MB

#define CK(x)                                                                                          \
  do {                                                                                                 \
    auto e_ = (x);                                                                                     \
    if (e_ != 0) { std::printf("%s failed: %d (line %d)\n", #x, int(e_), __LINE__); std::exit(1); } \
  } while (0)

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Maps {
  CUtensorMap m[3];  // box rows 64, 128, 256
};

__global__ void __launch_bounds__(32, 1)
probe(const __grid_constant__ Maps maps, int which, int stages, int boxes, int iters, int lanes,
      unsigned long long* out) {
  extern __shared__ unsigned char raw[];
  __shared__ alignas(8) uint64_t full[16];
  unsigned char* smem = raw + ((1024 - (reinterpret_cast<uintptr_t>(raw) & 1023)) & 1023);
  const int lane = threadIdx.x;
  const int rows = 64 << which, box_bytes = rows * 128;
  const CUtensorMap* map = &maps.m[which];
  if (lane == 0) {
    for (int s = 0; s < stages; ++s) cuda::ptx::mbarrier_init(&full[s], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncwarp();
  const int per_col = kRows / rows, nbox_total = per_col * (kCols / 64);
  const unsigned long long t0 = globaltimer();
  long long clk = clock64();
  for (int i = 0; i < iters + stages; ++i) {
    const int s = i % stages;
    if (i >= stages && lane == 0) {
      const uint32_t parity = ((i - stages) / stages) & 1;
      while (!cuda::ptx::mbarrier_try_wait_parity(&full[s], parity)) {}
    }
    if (i >= iters) continue;
    if (lane == 0)
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &full[s], static_cast<uint32_t>(boxes * box_bytes));
    if (lanes) __syncwarp();
    for (int b = lanes ? lane : 0; b < boxes; b += lanes ? 32 : 1) {
      if (!lanes && lane != 0) break;
      const int k = (blockIdx.x * 37 + i * boxes + b) % nbox_total;
      const int32_t coords[2] = {64 * (k / per_col), rows * (k % per_col)};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                      smem + (s * boxes + b) * box_bytes, map, coords, &full[s]);
    }
    __syncwarp();
  }
  clk = clock64() - clk;
  if (lane == 0) {
    out[blockIdx.x] = globaltimer() - t0;
    if (blockIdx.x == 0) out[512] = clk;
  }
}

int main() {
  char* src;
  CK(cudaMalloc(&src, size_t(kRows) * kCols * 2));
  CK(cudaMemset(src, 1, size_t(kRows) * kCols * 2));
  unsigned long long* out;
  CK(cudaMalloc(&out, 1024 * sizeof(unsigned long long)));
  // The driver's entry point through the runtime: no -lcuda at link time.
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                      cudaEnableDefault, &q));
  Maps maps;
  for (int w = 0; w < 3; ++w) {
    const cuuint64_t dims[2] = {kCols, kRows}, strides[1] = {kCols * 2};
    const cuuint32_t box[2] = {64, cuuint32_t(64 << w)}, estr[2] = {1, 1};
    CK(encode(&maps.m[w], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, src, dims, strides, box, estr,
              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  }
  const int smem = 227 * 1024;
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem - 1024));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("box rows, stage KB x stages, issue | grid | GB/s per SM (median CTA), aggregate TB/s | "
              "ns (median CTA) and SM clocks (CTA 0) per stage\n");
  const int iters = 4000;
  for (int grid : {1, 64, sms})
    for (int stage_kb : {32, 48, 64})
      for (int which = 0; which < 3; ++which)
        for (int lanes = 0; lanes < 2; ++lanes) {
          const int box_kb = 8 << which, boxes = stage_kb / box_kb, stages = std::min(8, 192 / stage_kb);
          if (boxes < 1 || stage_kb % box_kb) continue;
          if (lanes && boxes == 1) continue;
          for (int rep = 0; rep < 3; ++rep)  // warm L2 and the clocks
            probe<<<grid, 32, smem - 1024>>>(maps, which, stages, boxes, iters, lanes, out);
          CK(cudaDeviceSynchronize());
          std::vector<unsigned long long> t(grid), c(1);
          CK(cudaMemcpy(t.data(), out, grid * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(c.data(), out + 512, sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          std::sort(t.begin(), t.end());
          const double bytes = double(iters) * stage_kb * 1024;
          std::printf("%3d rows, %2d KB x %d, %-5s | %3d | %6.1f %6.2f | %5.0f ns %5.0f clk\n", 64 << which,
                      stage_kb, stages, lanes ? "lanes" : "lane0", grid, bytes / t[grid / 2],
                      bytes / t.back() * grid / 1e3, double(t[grid / 2]) / iters, double(c[0]) / iters);
        }
  return 0;
}
