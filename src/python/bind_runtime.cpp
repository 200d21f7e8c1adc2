// The GPU runtime (src/runtime/): JIT + launch of a Program. megakittens/gpu.py is the Python glue.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "python/bind.h"

#ifdef MK_NO_GPU_RUNTIME
// Built without <cuda.h>: the GPU runtime is absent and megakittens.gpu reports why.
void bind_runtime(nb::module_& m) { m.attr("gpu_runtime_missing") = "built without cuda.h (CUDA toolkit headers)"; }
#else
#include "runtime/codegen.h"
#include "runtime/launch.h"

using namespace mk;

void bind_runtime(nb::module_& m) {
  m.attr("gpu_runtime_missing") = "";
  nb::exception<rt::GpuError>(m, "GpuError", PyExc_RuntimeError);

  m.def("gpu_device_info", [] {
    const rt::DeviceInfo i = rt::device_info();
    nb::dict d;
    d["name"] = i.name;
    d["driver_version"] = i.driver_version;
    d["num_sms"] = i.num_sms;
    d["compute_capability"] = nb::make_tuple(i.cc_major, i.cc_minor);
    return d;
  }, "Name, driver version, SM count and compute capability of the current device. Raises GpuError.");
  m.def("gpu_max_ctas", &rt::max_ctas, nb::arg("cluster_size"),
        "Co-resident megakernel CTAs for this cluster size (maxActiveClusters x cluster size): the num_sms to "
        "schedule per-SM tables with.");
  m.def("gpu_generate_source", &rt::generate_source, nb::arg("program"),
        "The generated megakernel source for a Program (it #includes kernels/mk/*.cuh).");
  m.def("gpu_jit_flags", [](const std::string& kernels_dir, const std::string& cuda_include) {
    rt::JitOptions o;
    o.kernels_dir = kernels_dir;
    o.cuda_include = cuda_include;
    return rt::jit_flags(o);
  }, nb::arg("kernels_dir"), nb::arg("cuda_include"));
  m.def("nvrtc_compile",
        [](const std::string& source, const std::vector<std::string>& flags, const std::vector<std::string>& paths) {
          rt::CompileResult r;
          {
            nb::gil_scoped_release release;
            r = rt::nvrtc_compile(paths, source, flags);
          }
          return nb::make_tuple(nb::bytes(r.cubin.data(), r.cubin.size()), r.log, r.ms);
        },
        nb::arg("source"), nb::arg("flags"), nb::arg("nvrtc_paths"),
        "Compiles with NVRTC (no GPU needed): (cubin, log, ms). Raises GpuError with the log on failure.");

  nb::class_<rt::GpuKernel>(m, "GpuKernel")
      .def("__init__",
           [](rt::GpuKernel* self, const Program& p, const std::string& kernels_dir, const std::string& cuda_include,
              const std::vector<std::string>& nvrtc_paths, const std::string& cache_dir, bool use_cache) {
             rt::JitOptions o;
             o.kernels_dir = kernels_dir;
             o.cuda_include = cuda_include;
             o.nvrtc_paths = nvrtc_paths;
             o.cache_dir = cache_dir;
             o.use_cache = use_cache;
             nb::gil_scoped_release release;
             new (self) rt::GpuKernel(p, o);
           },
           nb::arg("program"), nb::arg("kernels_dir"), nb::arg("cuda_include"), nb::arg("nvrtc_paths"),
           nb::arg("cache_dir") = "", nb::arg("use_cache") = true)
      .def("run",
           [](rt::GpuKernel& k, const std::vector<uint64_t>& ptrs, uint64_t stream, bool global_queue,
              double timeout_s, bool sync, bool pdl, int64_t plant_deadlock, uint64_t timeline) {
             rt::RunOptions o;
             o.global_queue = global_queue;
             o.timeout_s = timeout_s;
             o.sync = sync;
             o.pdl = pdl;
             o.plant_deadlock = plant_deadlock;
             o.timeline = timeline;
             nb::gil_scoped_release release;
             k.run(ptrs, stream, o);
           },
           nb::arg("slot_ptrs"), nb::arg("stream") = 0, nb::arg("global_queue") = false, nb::arg("timeout_s") = 10.0,
           nb::arg("sync") = false, nb::arg("pdl") = true, nb::arg("plant_deadlock") = -1,
           nb::arg("timeline") = 0)
      .def("check", &rt::GpuKernel::check_watchdog, "Raises DeadlockError if an earlier launch's watchdog fired.")
      .def_prop_ro("grid", &rt::GpuKernel::grid)
      .def_prop_ro("source", &rt::GpuKernel::source)
      .def_prop_ro("log", &rt::GpuKernel::log)
      .def_prop_ro("key", &rt::GpuKernel::key)
      .def_prop_ro("cache_hit", &rt::GpuKernel::cache_hit)
      .def_prop_ro("compile_ms", &rt::GpuKernel::compile_ms)
      .def_prop_ro("num_regs", &rt::GpuKernel::num_regs)
      .def_prop_ro("launches", &rt::GpuKernel::launches);
}
#endif  // MK_NO_GPU_RUNTIME
