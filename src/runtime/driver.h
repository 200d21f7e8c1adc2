// libcuda and libnvrtc, loaded at run time with dlopen so that `import megakittens` works on a
// machine without a driver (DESIGN §2). Only the types come from <cuda.h>; no symbol is linked.
#pragma once
#include <cuda.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mk::rt {

// A CUDA driver, NVRTC or launch failure (Python: RuntimeError).
struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define MK_CU_FUNCS(X)                                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString) X(cuCtxGetCurrent) X(cuCtxSetCurrent)            \
  X(cuCtxGetDevice) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)                       \
  X(cuDevicePrimaryCtxRetain) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)           \
  X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernelEx) X(cuOccupancyMaxActiveClusters)     \
  X(cuTensorMapEncodeTiled) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemsetD32)  X(cuMemcpyHtoDAsync) \
  X(cuMemsetD32Async) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer) X(cuMemFreeHost)              \
  X(cuStreamSynchronize) X(cuStreamQuery)

// The driver API, resolved once. cuda.h's #defines map e.g. cuMemAlloc to cuMemAlloc_v2; the member
// names expand the same way, and dlsym looks up the expanded (versioned) symbol.
struct Driver {
#define MK_DECL(fn) decltype(&::fn) fn = nullptr;
  MK_CU_FUNCS(MK_DECL)
#undef MK_DECL
  int version = 0;
};

// Loads libcuda.so.1 and calls cuInit(0) once. Throws GpuError when no driver is present.
const Driver& driver();
// Throws GpuError "<what>: <CUDA error string>" unless r == CUDA_SUCCESS.
void check(CUresult r, const char* what);
// Makes sure a context is current on this thread (torch's primary context, or device 0's).
void ensure_context();

// NVRTC, loaded from the first path in `candidates` that dlopen accepts.
struct Nvrtc {
  int major = 0, minor = 0;
  std::string path;
};
const Nvrtc& nvrtc(const std::vector<std::string>& candidates);

struct CompileResult {
  std::vector<char> cubin;
  std::string log;       // NVRTC + ptxas (-Xptxas -v) log
  double ms = 0;
};
// Compiles `source` (kernel entry "megakittens_kernel") with `flags`. Throws GpuError with the log.
CompileResult nvrtc_compile(const std::vector<std::string>& candidates, const std::string& source,
                            const std::vector<std::string>& flags);

}  // namespace mk::rt
