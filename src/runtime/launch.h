// One Program compiled for the GPU: JIT (codegen → NVRTC → cubin cache → module), the device state
// (instruction tables, barrier counters, queue counter, abort flag, mapped diagnostic record) and
// the launch (DESIGN §6, seed §07).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/codegen.h"
#include "runtime/driver.h"
#include "schedule/program.h"

namespace mk::rt {

struct JitOptions {
  std::string kernels_dir;               // holds mk/interpreter.cuh
  std::string cuda_include;              // holds cuda_bf16.h and cccl/cuda/ptx
  std::vector<std::string> nvrtc_paths;  // dlopen candidates, first that loads wins
  std::string cache_dir;                 // "" = default_cache_dir()
  bool use_cache = true;
  std::vector<std::string> extra_flags;
};

struct RunOptions {
  bool global_queue = false;
  double timeout_s = 10.0;     // watchdog; 0 = off
  bool sync = false;           // synchronize the stream and raise a watchdog error now
  bool pdl = true;             // programmatic dependent launch attribute
  int64_t plant_deadlock = -1; // test hook: this instruction's first src target becomes unreachable
  uint64_t timeline = 0;       // device address of [N, kTimelineWords] u64 event times (kernels/mk/vm.cuh [Note: timeline])
};

// NVRTC flags for the megakernel (shared by the JIT and tests/test_nvrtc.py).
std::vector<std::string> jit_flags(const JitOptions&);

// Co-resident CTAs for the megakernel's launch shape (384 threads, 230,400 B dynamic shared memory)
// with `cluster_size`: maxActiveClusters x cluster_size, from a tiny probe kernel. The scheduler's
// num_sms for per-SM tables.
int max_ctas(int cluster_size);

struct DeviceInfo {
  std::string name;
  int driver_version = 0, num_sms = 0, cc_major = 0, cc_minor = 0;
};
DeviceInfo device_info();

class GpuKernel {
 public:
  GpuKernel(const Program& program, const JitOptions& options);
  ~GpuKernel();
  GpuKernel(const GpuKernel&) = delete;
  GpuKernel& operator=(const GpuKernel&) = delete;

  // Launches the megakernel on `stream` (a CUstream as an integer; 0 = legacy default stream) over
  // the slot buffers (device addresses, one per Program slot). Raises DeadlockError for a watchdog
  // report (this launch with sync, or an earlier one), GpuError for CUDA failures.
  void run(const std::vector<uint64_t>& slot_ptrs, uint64_t stream, const RunOptions& options);
  // Raises DeadlockError if an earlier launch's watchdog fired (call after synchronizing).
  void check_watchdog();

  int grid() const { return grid_; }
  const std::string& source() const { return source_; }
  const std::string& log() const { return log_; }
  const std::string& key() const { return key_; }
  bool cache_hit() const { return cache_hit_; }
  double compile_ms() const { return compile_ms_; }
  int num_regs() const { return num_regs_; }
  int64_t launches() const { return launches_; }

 private:
  struct Diag;
  void reset_state();
  std::string diag_message(const Diag&) const;
  void build_params(const std::vector<uint64_t>& slot_ptrs);
  uint64_t device_maps(const std::vector<uint64_t>& slot_ptrs, CUstream stream);

  Program program_;
  std::string source_, log_, key_;
  bool cache_hit_ = false;
  double compile_ms_ = 0;
  int num_regs_ = 0;
  CUmodule module_ = nullptr;
  CUfunction func_ = nullptr;
  int grid_ = 0;
  // Device state: [abort flag, queue counter, pad x14, barriers...] as int32.
  CUdeviceptr state_ = 0, table_sm_ = 0, table_global_ = 0;
  size_t state_words_ = 0;
  Diag* diag_host_ = nullptr;
  CUdeviceptr diag_dev_ = 0;
  int32_t epoch_ = 0, max_target_ = 1;
  uint32_t queue_launches_ = 0;
  int64_t launches_ = 0;
  ParamLayout layout_;
  std::vector<unsigned char> params_;  // the kernel parameter (ParamLayout)
  std::vector<unsigned char> maps_host_;  // maps_in_global: host image of the device tile maps
  struct MapBuffer {
    std::vector<uint64_t> ptrs;  // slot pointers its maps were encoded for
    CUdeviceptr dev = 0;
    uint64_t last_use = 0;
  };
  std::vector<MapBuffer> map_buffers_;
  uint64_t map_clock_ = 0;
  std::vector<uint64_t> params_ptrs_;  // slot pointers params_ was built for
  XmapPlan xmaps_;  // per slot: its Gemm / Attention tile maps in Globals::xmaps
  int64_t planted_ = -1;
  bool global_rows_ = false;  // the last launch ran the global queue: Diag::instruction is a table row
};

}  // namespace mk::rt
