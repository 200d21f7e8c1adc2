#include "runtime/driver.h"

#include <dlfcn.h>

#include <chrono>
#include <filesystem>
#include <mutex>

namespace mk::rt {

namespace {

#define MK_STR2(x) #x
#define MK_STR(x) MK_STR2(x)

Driver load_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) throw GpuError(std::string("megakittens: no CUDA driver (dlopen libcuda.so.1: ") + dlerror() + ")");
  Driver d;
#define MK_LOAD(fn)                                                                     \
  d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(h, MK_STR(fn)));                       \
  if (!d.fn) throw GpuError(std::string("megakittens: libcuda lacks ") + MK_STR(fn));
  MK_CU_FUNCS(MK_LOAD)
#undef MK_LOAD
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) throw GpuError("megakittens: cuInit failed with CUresult " + std::to_string(int(r)));
  d.cuDriverGetVersion(&d.version);
  return d;
}

// NVRTC entry points (declared here: nvrtc.h is not needed at build time).
using nvrtcProgram = struct _nvrtcProgram*;
struct NvrtcApi {
  int (*Version)(int*, int*) = nullptr;
  int (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  int (*DestroyProgram)(nvrtcProgram*) = nullptr;
  int (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  int (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  int (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  int (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  Nvrtc info;
};

NvrtcApi load_nvrtc(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const auto& path : candidates) {
    // NVRTC dlopens libnvrtc-builtins by name; a wheel's lib folder is not on the loader path, so
    // load the builtins beside `path` first.
    const auto slash = path.rfind('/');
    if (slash != std::string::npos) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(path.substr(0, slash), ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("libnvrtc-builtins.so", 0) == 0) dlopen(e.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
      }
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      tried += "\n  " + path + ": " + dlerror();
      continue;
    }
    NvrtcApi a;
    auto sym = [&](const char* name) {
      void* p = dlsym(h, name);
      if (!p) throw GpuError(std::string("megakittens: ") + path + " lacks " + name);
      return p;
    };
    a.Version = reinterpret_cast<decltype(a.Version)>(sym("nvrtcVersion"));
    a.CreateProgram = reinterpret_cast<decltype(a.CreateProgram)>(sym("nvrtcCreateProgram"));
    a.CompileProgram = reinterpret_cast<decltype(a.CompileProgram)>(sym("nvrtcCompileProgram"));
    a.DestroyProgram = reinterpret_cast<decltype(a.DestroyProgram)>(sym("nvrtcDestroyProgram"));
    a.GetProgramLogSize = reinterpret_cast<decltype(a.GetProgramLogSize)>(sym("nvrtcGetProgramLogSize"));
    a.GetProgramLog = reinterpret_cast<decltype(a.GetProgramLog)>(sym("nvrtcGetProgramLog"));
    a.GetCUBINSize = reinterpret_cast<decltype(a.GetCUBINSize)>(sym("nvrtcGetCUBINSize"));
    a.GetCUBIN = reinterpret_cast<decltype(a.GetCUBIN)>(sym("nvrtcGetCUBIN"));
    a.GetErrorString = reinterpret_cast<decltype(a.GetErrorString)>(sym("nvrtcGetErrorString"));
    a.Version(&a.info.major, &a.info.minor);
    a.info.path = path;
    return a;
  }
  throw GpuError("megakittens: NVRTC not found (install the nvidia-cuda-nvrtc wheel or set MEGAKITTENS_NVRTC); tried:" +
                 tried);
}

std::mutex g_mu;

const NvrtcApi& nvrtc_api(const std::vector<std::string>& candidates) {
  static NvrtcApi* api = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!api) api = new NvrtcApi(load_nvrtc(candidates));
  return *api;
}

}  // namespace

const Driver& driver() {
  static Driver* d = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      d = new Driver(load_driver());
    } catch (const GpuError& e) {
      error = e.what();
    }
  });
  if (!d) throw GpuError(error);
  return *d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* s = nullptr;
  driver().cuGetErrorString(r, &s);
  throw GpuError(std::string("megakittens: ") + what + ": " + (s ? s : "unknown CUDA error") + " (" +
                 std::to_string(int(r)) + ")");
}

void ensure_context() {
  const Driver& d = driver();
  CUcontext ctx = nullptr;
  check(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx) return;
  CUdevice dev;
  check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

const Nvrtc& nvrtc(const std::vector<std::string>& candidates) { return nvrtc_api(candidates).info; }

CompileResult nvrtc_compile(const std::vector<std::string>& candidates, const std::string& source,
                            const std::vector<std::string>& flags) {
  const NvrtcApi& a = nvrtc_api(candidates);
  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  int r = a.CreateProgram(&prog, source.c_str(), "megakittens_kernel.cu", 0, nullptr, nullptr);
  if (r != 0) throw GpuError(std::string("megakittens: nvrtcCreateProgram: ") + a.GetErrorString(r));
  std::vector<const char*> opts;
  for (const auto& f : flags) opts.push_back(f.c_str());
  r = a.CompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  CompileResult out;
  size_t n = 0;
  a.GetProgramLogSize(prog, &n);
  out.log.resize(n);
  if (n) a.GetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r != 0) {
    a.DestroyProgram(&prog);
    throw GpuError(std::string("megakittens: NVRTC failed to compile the megakernel (") + a.GetErrorString(r) +
                   "):\n" + out.log);
  }
  a.GetCUBINSize(prog, &n);
  out.cubin.resize(n);
  if (n) a.GetCUBIN(prog, out.cubin.data());
  a.DestroyProgram(&prog);
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace mk::rt
