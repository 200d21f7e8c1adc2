#include "runtime/launch.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ir/error.h"
#include "runtime/cache.h"
#include "runtime/codegen.h"

namespace mk::rt {

namespace {

constexpr int kThreads = 384;
constexpr int kDynamicSmem = 7 * 32768 + 1024;  // kernels/mk/vm.cuh kDynamicSmem
constexpr int kStateHead = 16;  // words before the barriers in state_: abort flag, queue, data error (mk/simt.cuh)
constexpr size_t kCommonBytes = ParamLayout::kCommonBytes, kSlotBytes = ParamLayout::kSlotBytes;
constexpr size_t kMapBytes = ParamLayout::kMapBytes;

// Host mirror of mk::Common (kernels/mk/vm.cuh).
struct Common {
  uint64_t instructions, barriers, queue, abort_flag, diag, timeout_ns;
  int32_t epoch, num_instructions, waves, global_queue, num_ctas;
  uint32_t queue_base;
  uint64_t timeline, maps;
  int32_t pad[10];
};
static_assert(sizeof(Common) == kCommonBytes, "host Common mirrors kernels/mk/vm.cuh");

struct SlotDesc {
  uint64_t ptr;
  int32_t dims[4];
  int32_t flags, xmap;
};
static_assert(sizeof(SlotDesc) == kSlotBytes, "host SlotDesc mirrors kernels/mk/vm.cuh");

const char* kSiteNames[] = {"?", "input barrier", "reuse barrier", "pipeline mbarrier", "instruction slot",
                            "icode check", "index check", "page count"};

// The tiny probe kernel of max_ctas(): the megakernel's launch shape, no body.
const char* kProbePtx =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry mk_probe() .maxntid 384, 1, 1 .minnctapersm 1 { ret; }\n";

// MEGAKITTENS_DEBUG=1: trace the JIT and launch steps on stderr.
void trace(const char* step) {
  static const bool on = [] {
    const char* e = std::getenv("MEGAKITTENS_DEBUG");
    return e && *e && *e != '0';
  }();
  if (on) std::fprintf(stderr, "[megakittens] %s\n", step), std::fflush(stderr);
}

// A tile map of 16-bit floats (bf16, or fp16 where `f16`), `rank` dims (dims[0] innermost; strides of dims 1..,
// in bytes), 256-byte L2 promotion.
CUresult encode_tiled(CUtensorMap* map, uint64_t ptr, cuuint32_t rank, const cuuint64_t* dims,
                      const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle, bool f16) {
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  const CUtensorMapDataType t = f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return driver().cuTensorMapEncodeTiled(map, t, rank, reinterpret_cast<void*>(ptr),
                                         dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// A 4-D (c, r, d, b) 16-bit tile map of the slot's padded shape, box {box_c, box_r, box_d, 1}.
CUresult encode_map(CUtensorMap* map, uint64_t ptr, const Coord4& p, cuuint32_t box_c, cuuint32_t box_r,
                    CUtensorMapSwizzle swizzle, bool f16, cuuint32_t box_d = 1) {
  if ((ptr % 16) != 0 || (p[3] * 2) % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
  const cuuint64_t dims[4] = {cuuint64_t(p[3]), cuuint64_t(p[2]), cuuint64_t(p[1]), cuuint64_t(p[0])};
  const cuuint64_t strides[3] = {cuuint64_t(p[3] * 2), cuuint64_t(p[2] * p[3] * 2), cuuint64_t(p[1] * p[2] * p[3] * 2)};
  const cuuint32_t box[4] = {box_c, box_r, box_d, 1};
  return encode_tiled(map, ptr, 4, dims, strides, box, swizzle, f16);
}

// [Note: gemm wide boxes] (kernels/mk/itypes/gemm.cuh): the slot's columns split into blocks of 64, a 5-D
// (c % 64, r, c / 64, d, b) map whose box {64, 64, blocks, 1, 1} is `blocks` 64x64 boxes of adjacent
// column blocks in one copy, landing as consecutive 8 KB boxes (128-byte swizzle). Needs the padded last
// dim a multiple of 64.
CUresult encode_split_map(CUtensorMap* map, uint64_t ptr, const Coord4& p, cuuint32_t blocks, bool f16) {
  if ((ptr % 16) != 0 || p[3] % 64 != 0) return CUDA_ERROR_INVALID_VALUE;
  const cuuint64_t dims[5] = {64, cuuint64_t(p[2]), cuuint64_t(p[3] / 64), cuuint64_t(p[1]), cuuint64_t(p[0])};
  const cuuint64_t strides[4] = {cuuint64_t(p[3] * 2), 128, cuuint64_t(p[2] * p[3] * 2), cuuint64_t(p[1] * p[2] * p[3] * 2)};
  const cuuint32_t box[5] = {64, 64, blocks, 1, 1};
  return encode_tiled(map, ptr, 5, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, f16);
}

}  // namespace

struct GpuKernel::Diag {
  int32_t flag, site, sm, cta, warp, lane, instruction, icode, barrier, value, target, epoch;
  long long waited_ns;
};

std::vector<std::string> jit_flags(const JitOptions& o) {
  std::vector<std::string> f = {"--gpu-architecture=sm_90a", "-std=c++20", "-DNDEBUG", "-lineinfo",
                                "-Xptxas=-v", "-Xptxas=--warn-on-spills",
                                "-I" + o.kernels_dir, "-I" + o.cuda_include, "-I" + o.cuda_include + "/cccl"};
  f.insert(f.end(), o.extra_flags.begin(), o.extra_flags.end());
  return f;
}

DeviceInfo device_info() {
  const Driver& d = driver();
  ensure_context();
  CUdevice dev;
  check(d.cuCtxGetDevice(&dev), "cuCtxGetDevice");
  DeviceInfo info;
  char name[256] = {0};
  d.cuDeviceGetName(name, sizeof name, dev);
  info.name = name;
  info.driver_version = d.version;
  d.cuDeviceGetAttribute(&info.num_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  d.cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  return info;
}

static int occupancy_ctas(CUfunction f, int cluster_size) {
  const Driver& d = driver();
  check(d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kDynamicSmem),
        "cuFuncSetAttribute(max dynamic shared memory)");
  CUlaunchConfig cfg{};
  cfg.gridDimX = cluster_size;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = kThreads;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = kDynamicSmem;
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = cluster_size;
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  check(d.cuOccupancyMaxActiveClusters(&clusters, f, &cfg), "cuOccupancyMaxActiveClusters");
  return clusters * cluster_size;
}

int max_ctas(int cluster_size) {
  const Driver& d = driver();
  ensure_context();
  static CUmodule probe = nullptr;
  static CUfunction f = nullptr;
  if (!probe) {
    check(d.cuModuleLoadData(&probe, kProbePtx), "cuModuleLoadData(probe)");
    check(d.cuModuleGetFunction(&f, probe, "mk_probe"), "cuModuleGetFunction(probe)");
  }
  return occupancy_ctas(f, cluster_size);
}

GpuKernel::GpuKernel(const Program& program, const JitOptions& options) : program_(program) {
  const Driver& d = driver();
  ensure_context();
  if (program_.cluster_size != 1 && program_.cluster_size != 2)
    throw GpuError("megakittens: the GPU runtime supports cluster sizes 1 and 2, got " +
                   std::to_string(program_.cluster_size));
  xmaps_ = xmap_plan(program_);
  layout_ = param_layout(program_);
  if (layout_.param_bytes() > ParamLayout::kMaxParamBytes)
    throw GpuError("megakittens: " + std::to_string(layout_.nslots) + " tensor slots exceed the 32,764-byte kernel "
                   "parameter (32 B a slot descriptor once the tile maps are in device memory: at most 1,019 slots)");

  // JIT with the disk cache.
  trace("generate source");
  source_ = generate_source(program_);
  trace("nvrtc load");
  const auto flags = jit_flags(options);
  const Nvrtc& nv = nvrtc(options.nvrtc_paths);
  std::string key_input = "megakittens-jit-v1\n" + source_ + '\0' + tree_digest_input(options.kernels_dir) + '\0';
  for (const auto& f : flags)
    if (f.rfind("-I", 0) != 0) key_input += f + '\0';  // include paths name places, not content
  key_input += "nvrtc " + std::to_string(nv.major) + "." + std::to_string(nv.minor);
  key_ = sha256_hex(key_input);
  trace("cache key");
  const std::string dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  std::vector<char> cubin;
  const auto t0 = std::chrono::steady_clock::now();
  if (options.use_cache) {
    if (auto hit = cache_load(dir, key_)) {
      cubin = std::move(*hit);
      cache_hit_ = true;
    }
  }
  if (!cache_hit_) {
    trace("nvrtc compile");
    CompileResult r = nvrtc_compile(options.nvrtc_paths, source_, flags);
    trace("nvrtc done");
    log_ = r.log;
    cubin = std::move(r.cubin);
    if (options.use_cache) {
      std::string meta = "{\"program\": \"" + program_.name + "\", \"nvrtc\": \"" + std::to_string(nv.major) + "." +
                         std::to_string(nv.minor) + "\", \"compile_ms\": " + std::to_string(r.ms) + "}\n";
      cache_store(dir, key_, cubin, meta);
    }
  }
  trace("module load");
  check(d.cuModuleLoadData(&module_, cubin.data()), "cuModuleLoadData(megakernel)");
  compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  check(d.cuModuleGetFunction(&func_, module_, "megakittens_kernel"), "cuModuleGetFunction");
  d.cuFuncGetAttribute(&num_regs_, CU_FUNC_ATTRIBUTE_NUM_REGS, func_);
  trace("occupancy");
  grid_ = occupancy_ctas(func_, program_.cluster_size);
  trace("state");
  if (grid_ <= 0) throw GpuError("megakittens: the megakernel cannot be resident (occupancy 0)");

  // Device state, zeroed once; later launches use epoch-scaled targets instead of a memset.
  for (const auto& b : program_.barriers) max_target_ = std::max(max_target_, b.target);
  state_words_ = kStateHead + std::max<size_t>(1, program_.barriers.size());
  check(d.cuMemAlloc(&state_, state_words_ * 4), "cuMemAlloc(state)");
  check(d.cuMemsetD32(state_, 0, state_words_), "cuMemsetD32(state)");
  void* host = nullptr;
  check(d.cuMemHostAlloc(&host, sizeof(Diag), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
        "cuMemHostAlloc(diag)");
  diag_host_ = static_cast<Diag*>(host);
  std::memset(diag_host_, 0, sizeof(Diag));
  check(d.cuMemHostGetDevicePointer(&diag_dev_, host, 0), "cuMemHostGetDevicePointer(diag)");

  trace("kernel ready");
}

GpuKernel::~GpuKernel() {
  try {
    const Driver& d = driver();
    if (table_sm_) d.cuMemFree(table_sm_);
    if (table_global_) d.cuMemFree(table_global_);
    for (const auto& b : map_buffers_) d.cuMemFree(b.dev);
    if (state_) d.cuMemFree(state_);
    if (diag_host_) d.cuMemFreeHost(diag_host_);
    if (module_) d.cuModuleUnload(module_);
  } catch (...) {
  }
}

// Only the slots whose address changed since the last build are re-encoded: a call's fresh outputs
// change a few pointers, and encoding every slot's maps took most of a 16-layer model's host time.
void GpuKernel::build_params(const std::vector<uint64_t>& ptrs) {
  const bool fresh = params_.empty() || params_ptrs_.size() != ptrs.size();
  if (fresh) {
    params_.assign(layout_.param_bytes(), 0);
    maps_host_.assign(layout_.global_map_bytes(), 0);
  }
  // A failed encode leaves some slots at the new pointers: the next build starts over.
  struct Invalidate {
    std::vector<uint64_t>& ptrs;
    bool armed = true;
    ~Invalidate() { if (armed) ptrs.clear(); }
  } invalidate{params_ptrs_};
  // Tile map i (slot maps, then xmaps) lives in the parameter or in the device buffer's host image.
  auto map_at = [&](size_t i) {
    unsigned char* at = layout_.maps_in_global ? maps_host_.data() + i * kMapBytes
                        : i < layout_.nslots   ? params_.data() + kCommonBytes + i * kMapBytes
                                               : params_.data() + layout_.xmaps_offset() + (i - layout_.nslots) * kMapBytes;
    return reinterpret_cast<CUtensorMap*>(at);
  };
  for (size_t s = 0; s < program_.slots.size(); ++s) {
    if (!fresh && params_ptrs_[s] == ptrs[s]) continue;
    const TensorMeta& m = program_.slots[s];
    const Coord4 p = m.padded();
    SlotDesc sd{};
    sd.ptr = ptrs[s];
    for (int k = 0; k < 4; ++k) sd.dims[k] = static_cast<int32_t>(p[k]);
    sd.xmap = -1;
    sd.flags = static_cast<int32_t>(m.dtype) << 8;  // kernels/mk/simt.cuh slot_dtype
    if (m.dtype == DType::bf16) {
      // A 4-D (c, r, d, b) map with a 128x128 box, no swizzle: the elementwise tile (rows of 256 B).
      if (encode_map(map_at(s), ptrs[s], p, 128, 128, CU_TENSOR_MAP_SWIZZLE_NONE, false) == CUDA_SUCCESS) sd.flags |= 1;
    }
    if (const int x = xmaps_.index[s]; x >= 0) {
      // Gemm / Attention operands and outputs: 64x64 boxes (128-byte rows), 128-byte swizzle
      // (kernels/mk/itypes/gemm.cuh); a (B, S, H, D) Attention operand also gets 64 rows along dim d.
      CUtensorMap* map = map_at(layout_.nslots + x);
      const bool f16 = m.dtype == DType::f16;
      bool ok = (m.dtype == DType::bf16 || f16) &&
                encode_map(map, ptrs[s], p, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B, f16) == CUDA_SUCCESS;
      if (ok && xmaps_.strided[s])
        ok = encode_map(map_at(layout_.nslots + x + 1), ptrs[s], p, 64, 1, CU_TENSOR_MAP_SWIZZLE_128B, f16, 64) == CUDA_SUCCESS;
      if (xmaps_.strided[s]) sd.flags |= 8;  // the wide maps (if any) start one further
      if (ok && xmaps_.wide[s]) {  // [Note: gemm wide boxes]: flags bit 1 the row maps, bit 2 the split ones
        const size_t w = layout_.nslots + x + (xmaps_.strided[s] ? 2 : 1);
        const auto sw = CU_TENSOR_MAP_SWIZZLE_128B;
        if (encode_map(map_at(w), ptrs[s], p, 64, 128, sw, f16) == CUDA_SUCCESS &&
            encode_map(map_at(w + 3), ptrs[s], p, 64, 256, sw, f16) == CUDA_SUCCESS)
          sd.flags |= 2;
        if (encode_split_map(map_at(w + 1), ptrs[s], p, 2, f16) == CUDA_SUCCESS &&
            encode_split_map(map_at(w + 2), ptrs[s], p, 4, f16) == CUDA_SUCCESS)
          sd.flags |= 4;
      }
      if (!ok)
        throw GpuError("megakittens: tensor slot " + std::to_string(s) + " (" + m.str() +
                       ") is a Gemm / Attention operand and needs a TMA tile map: its base address must be 16-byte "
                       "aligned and its last dim a multiple of 8 elements (16 bytes)");
      sd.xmap = x;
    }
    std::memcpy(params_.data() + layout_.slots_offset() + s * kSlotBytes, &sd, sizeof sd);
  }
  invalidate.armed = false;
  params_ptrs_ = ptrs;
}

// MK_MAPS_IN_GLOBAL ([Note: tile maps] in kernels/mk/vm.cuh): the device buffer holding the tile maps of
// these slot pointers. A few buffers are kept, least recently used replaced, so that a caller alternating
// between output buffers does not re-upload each call; the upload is ordered on `stream` before the
// launch (launches of one GpuKernel are stream-serial already: they share the barrier counters).
uint64_t GpuKernel::device_maps(const std::vector<uint64_t>& ptrs, CUstream stream) {
  const Driver& d = driver();
  ++map_clock_;
  for (auto& b : map_buffers_)
    if (b.ptrs == ptrs) {
      b.last_use = map_clock_;
      return b.dev;
    }
  constexpr size_t kMapBuffers = 4;
  if (map_buffers_.size() < kMapBuffers) {
    MapBuffer b;
    check(d.cuMemAlloc(&b.dev, maps_host_.size()), "cuMemAlloc(tile maps)");
    map_buffers_.push_back(b);
  }
  MapBuffer* victim = &map_buffers_[0];
  for (auto& b : map_buffers_)
    if (b.last_use < victim->last_use) victim = &b;
  // From pageable memory: the call returns once maps_host_ has been consumed (staged or copied).
  check(d.cuMemcpyHtoDAsync(victim->dev, maps_host_.data(), maps_host_.size(), stream), "cuMemcpyHtoDAsync(tile maps)");
  victim->ptrs = ptrs;
  victim->last_use = map_clock_;
  return victim->dev;
}

void GpuKernel::reset_state() {
  const Driver& d = driver();
  check(d.cuMemsetD32(state_, 0, state_words_), "cuMemsetD32(state reset)");
  std::memset(diag_host_, 0, sizeof(Diag));
  epoch_ = 0;
  queue_launches_ = 0;
}

std::string GpuKernel::diag_message(const Diag& g) const {
  using std::to_string;
  const int site = (g.site >= 1 && g.site <= 7) ? g.site : 0;
  std::string m = g.site == 6 ? "megakittens: the megakernel for '" + program_.name + "' read an index out of range"
                              : "megakittens watchdog: the megakernel for '" + program_.name +
                                    "' stopped making progress (" + kSiteNames[site] + ")";
  if (g.site == 5) m += ": unknown icode " + to_string(g.value) + " (program has " + to_string(g.target) + ")";
  if (g.site == 6) m += ": index " + to_string(g.value) + " for a table of " + to_string(g.target) + " rows";
  // Under the global queue the device reports its table row ([Note: global claim order]).
  int instruction = g.instruction;
  if (global_rows_ && instruction >= 0 && instruction < static_cast<int>(program_.global_order.size()))
    instruction = program_.global_order[instruction];
  m += "\n  SM " + to_string(g.sm) + ", CTA " + to_string(g.cta) + ", warp " + to_string(g.warp) + " lane " +
       to_string(g.lane) + "\n  instruction " + to_string(instruction) + ", icode " + to_string(g.icode);
  if (g.icode >= 0 && g.icode < static_cast<int>(program_.icodes.size())) m += " (" + program_.icodes[g.icode]->str() + ")";
  if (instruction >= 0 && instruction < static_cast<int>(program_.instruction_node.size())) {
    const int n = program_.instruction_node[instruction];
    if (n >= 0) m += ", node '" + program_.nodes[n].name + "'";
  }
  if (g.site == 1 || g.site == 2)
    m += "\n  global barrier " + to_string(g.barrier) + ": value " + to_string(g.value) + ", target " +
         to_string(g.target) + " (launch epoch " + to_string(g.epoch) + ")";
  else if (g.site == 3 || g.site == 4)
    m += "\n  shared mbarrier " + to_string(g.barrier) + ", parity " + to_string(g.value);
  else if (g.site == 7)  // kernels/mk/vm.cuh [Note: page counts]
    m += "\n  page lid " + to_string(g.barrier) + ": finished " + to_string(g.value) + " times, waiting for " +
         to_string(g.target);
  m += "\n  waited " + to_string(g.waited_ns / 1000000) + " ms";
  return m;
}

void GpuKernel::check_watchdog() {
  volatile Diag* v = diag_host_;
  if (v->flag == 0) return;
  Diag copy;
  std::memcpy(&copy, const_cast<Diag*>(diag_host_), sizeof copy);
  const std::string msg = diag_message(copy);
  reset_state();
  if (copy.site == 6) throw std::out_of_range(msg);  // Python IndexError, as eager embedding
  throw DeadlockError(msg);
}

void GpuKernel::run(const std::vector<uint64_t>& ptrs, uint64_t stream_int, const RunOptions& o) {
  const Driver& d = driver();
  ensure_context();
  check_watchdog();  // an earlier launch's watchdog
  if (ptrs.size() != program_.slots.size())
    throw GpuError("megakittens: expected " + std::to_string(program_.slots.size()) + " slot pointers, got " +
                   std::to_string(ptrs.size()));
  CUstream stream = reinterpret_cast<CUstream>(stream_int);
  const int cs = program_.cluster_size;
  const int64_t n = static_cast<int64_t>(program_.instructions.size());

  // Instruction tables, uploaded once (the plant_deadlock hook patches a copy).
  if (o.plant_deadlock != planted_) {
    if (table_sm_) d.cuMemFree(table_sm_);
    if (table_global_) d.cuMemFree(table_global_);
    table_sm_ = table_global_ = 0;
    planted_ = o.plant_deadlock;
  }
  auto upload = [&](std::vector<int32_t> t, CUdeviceptr& dst, int64_t row_of_instr) {
    if (planted_ >= 0 && planted_ < n) {
      const Instruction& in = program_.instructions[planted_];
      if (in.num_src_barriers() == 0)
        throw GpuError("megakittens: plant_deadlock: instruction " + std::to_string(planted_) + " has no src barrier");
      t[row_of_instr * 64 + 39] += 1 << 20;  // src_targets[0]
    }
    check(d.cuMemAlloc(&dst, std::max<size_t>(1, t.size()) * 4), "cuMemAlloc(table)");
    if (!t.empty()) check(d.cuMemcpyHtoD(dst, t.data(), t.size() * 4), "cuMemcpyHtoD(table)");
  };
  int grid = grid_;
  global_rows_ = o.global_queue;
  if (o.global_queue) {
    if (!table_global_) upload(program_.table_global(), table_global_, program_.global_row(planted_));
  } else {
    if (program_.profile.num_sms != grid_)
      throw GpuError("megakittens: the per-SM table was scheduled for " + std::to_string(program_.profile.num_sms) +
                     " SMs but " + std::to_string(grid_) +
                     " CTAs are co-resident; schedule with num_sms = megakittens.gpu.num_ctas(cluster_size)");
    if (!table_sm_) upload(program_.table_per_sm(), table_sm_, planted_);
  }
  trace("params");
  if (params_ptrs_ != ptrs) build_params(ptrs);

  // Epochs: launch e waits for counter >= e * target, so counters need no reset between launches.
  if (static_cast<int64_t>(epoch_ + 1) * max_target_ >= INT_MAX - 1) {
    check(d.cuMemsetD32Async(state_ + kStateHead * 4, 0, state_words_ - kStateHead, stream), "cuMemsetD32Async");
    epoch_ = 0;
  }
  ++epoch_;
  const uint32_t units = static_cast<uint32_t>(n / cs);
  Common c{};
  c.instructions = o.global_queue ? table_global_ : table_sm_;
  c.barriers = state_ + kStateHead * 4;
  c.queue = state_ + 4;
  c.abort_flag = state_;
  c.diag = diag_dev_;
  c.timeout_ns = static_cast<uint64_t>(std::max(0.0, o.timeout_s) * 1e9);
  c.epoch = epoch_;
  c.num_instructions = static_cast<int32_t>(n);
  c.waves = static_cast<int32_t>(program_.waves());
  c.global_queue = o.global_queue ? 1 : 0;
  c.num_ctas = grid;
  // Each launch makes exactly `units` claims (kernels/mk/interpreter.cuh [Note: static first claim]).
  c.queue_base = queue_launches_ * units;
  c.timeline = o.timeline;
  c.maps = layout_.maps_in_global ? device_maps(ptrs, stream) : 0;
  std::memcpy(params_.data(), &c, sizeof c);

  CUlaunchAttribute attrs[3]{};
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attrs[0].value.cooperative = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[1].value.clusterDim.x = cs;
  attrs[1].value.clusterDim.y = attrs[1].value.clusterDim.z = 1;
  attrs[2].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[2].value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = kThreads;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = kDynamicSmem;
  cfg.hStream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = o.pdl ? 3 : 2;
  // The driver copies the parameter's bytes at launch: params_ may change for the next one.
  void* args[] = {params_.data()};
  trace("launch");
  check(d.cuLaunchKernelEx(&cfg, func_, args, nullptr), "cuLaunchKernelEx(megakernel)");
  if (o.global_queue) ++queue_launches_;
  ++launches_;
  if (o.sync) {
    check(d.cuStreamSynchronize(stream), "megakernel execution");
    check_watchdog();
  }
}

}  // namespace mk::rt
