// Profiles, schedule() and the Program (docs/core-api.md).
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "python/bind.h"
#include "schedule/program.h"

using namespace mk;

namespace {

// An int32 numpy array that owns `data`.
nb::ndarray<nb::numpy, int32_t> to_numpy(std::vector<int32_t> data, std::vector<size_t> shape) {
  auto* owned = new std::vector<int32_t>(std::move(data));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<int32_t>*>(p); });
  return nb::ndarray<nb::numpy, int32_t>(owned->data(), shape.size(), shape.data(), owner);
}

nb::dict instruction_dict(const Instruction& in) {
  nb::dict d;
  d["icode"] = in.icode;
  std::vector<int> src(kMaxSrcTensors), dst(kMaxDstTensors);
  for (int k = 0; k < kMaxSrcTensors; ++k) src[k] = in.src_slot(k);
  for (int k = 0; k < kMaxDstTensors; ++k) dst[k] = in.dst_slot(k);
  d["src_tensors"] = src;
  d["dst_tensors"] = dst;
  d["indices"] = std::vector<int32_t>(in.indices, in.indices + kMaxIndices);
  d["src_barriers"] = std::vector<uint32_t>(in.src_barriers, in.src_barriers + in.num_src_barriers());
  d["src_targets"] = std::vector<int32_t>(in.src_targets, in.src_targets + in.num_src_barriers());
  d["num_src_input"] = int(in.num_src_input);
  d["num_src_late"] = int(in.num_src_late);
  d["num_src_reuse"] = int(in.num_src_reuse);
  d["dst_barriers"] = std::vector<uint32_t>(in.dst_barriers, in.dst_barriers + in.num_dst_barriers());
  d["num_dst_input"] = int(in.num_dst_input);
  d["num_dst_reuse"] = int(in.num_dst_reuse);
  return d;
}

}  // namespace

void bind_schedule(nb::module_& m) {
  m.attr("max_slots") = kMaxSlots;  // [Note: slot bits]
  nb::class_<Profile>(m, "Profile")
      .def_static("by_name", &Profile::by_name, nb::arg("name"), nb::arg("num_sms") = 0)
      .def_ro("name", &Profile::name)
      .def_ro("num_sms", &Profile::num_sms)
      .def_ro("num_pages", &Profile::num_pages)
      .def_ro("page_bytes", &Profile::page_bytes)
      .def_ro("gemm_cta_m", &Profile::gemm_cta_m)
      // Writable for experiments and tests: the GPU Gemm body takes gemm_n 128 or 256, gemm_n_narrow 0 or 128.
      .def_rw("gemm_n", &Profile::gemm_n)
      .def_rw("gemm_n_narrow", &Profile::gemm_n_narrow)
      .def_rw("gemm_split_k", &Profile::gemm_split_k)
      .def_rw("gemm_split_chain_steps", &Profile::gemm_split_chain_steps)
      // RMSNorm row pages per instruction, 1-3 (kernels/mk/itypes/rms_norm.cuh).
      .def_rw("rms_norm_pages", &Profile::rms_norm_pages)
      .def_rw("rms_norm_balance", &Profile::rms_norm_balance)
      .def_rw("balance_costs", &Profile::balance_costs)
      .def_rw("claim_chunk", &Profile::claim_chunk)
      .def_rw("max_slots", &Profile::max_slots)
      .def_ro("gemm_pair_tiles", &Profile::gemm_pair_tiles)
      .def("__repr__", [](const Profile& p) { return "Profile(" + p.name + ", num_sms=" + std::to_string(p.num_sms) + ")"; });

  nb::class_<NodeSchedule>(m, "NodeSchedule")
      .def_ro("node", &NodeSchedule::node)
      .def_ro("name", &NodeSchedule::name)
      .def_prop_ro("itype", [](const NodeSchedule& n) { return n.itype->str(); })
      .def_ro("start", &NodeSchedule::start)
      .def_ro("count", &NodeSchedule::count)
      .def_ro("padded", &NodeSchedule::padded)
      .def_ro("icode", &NodeSchedule::icode)
      .def_ro("src_slots", &NodeSchedule::src_slots)
      .def_ro("dst_slots", &NodeSchedule::dst_slots);

  nb::class_<Program>(m, "Program")
      .def_ro("name", &Program::name)
      .def_prop_ro("num_sms", [](const Program& p) { return p.profile.num_sms; })
      .def_ro("profile", &Program::profile)
      .def_ro("cluster_size", &Program::cluster_size)
      .def_ro("slots", &Program::slots)
      .def_ro("slot_base", &Program::slot_base)
      .def_ro("slot_offset", &Program::slot_offset)
      .def_ro("input_slots", &Program::input_slots)
      .def_ro("attr_slots", &Program::attr_slots)
      .def_ro("output_slots", &Program::output_slots)
      .def_prop_ro("output_views", [](const Program& p) {
        // Per output: None when it is its whole slot, else (offset, sizes, strides) for torch.as_strided.
        nb::list out;
        for (size_t k = 0; k < p.output_ranges.size(); ++k) {
          const TensorRange& r = p.output_ranges[k];
          const TensorMeta& m = p.slots[p.output_slots[k]];
          if (!r.alias && r.is_full(m.padded()) && r.view_shape == m.shape) {
            out.append(nb::none());
          } else {
            const TensorRange::Strided v = r.strided(r.backing(m).padded());
            out.append(nb::make_tuple(v.offset, v.sizes, v.strides));
          }
        }
        return out;
      })
      .def_prop_ro("icodes", [](const Program& p) {
        std::vector<std::string> v;
        for (const auto& it : p.icodes) v.push_back(it->str());
        return v;
      })
      .def_ro("nodes", &Program::nodes)
      .def_prop_ro("num_instructions", [](const Program& p) { return p.instructions.size(); })
      .def_prop_ro("num_barriers", [](const Program& p) { return p.barriers.size(); })
      .def_prop_ro("barriers", [](const Program& p) {
        std::vector<std::tuple<int, int, bool>> v;
        for (const auto& b : p.barriers) v.emplace_back(b.target, b.producer, b.reuse);
        return v;
      })
      .def_ro("phase_ms", &Program::phase_ms)
      .def_prop_ro("waves", &Program::waves)
      .def_ro("instruction_node", &Program::instruction_node)
      // Row r of the global queue's table holds instruction global_order[r] ([Note: global claim order]).
      .def_prop_ro("global_order", [](const Program& p) {
        std::vector<int32_t> o = p.global_order;
        if (o.empty())
          for (size_t i = 0; i < p.instructions.size(); ++i) o.push_back(static_cast<int32_t>(i));
        return o;
      })
      .def("table_per_sm", [](const Program& p) {
        return to_numpy(p.table_per_sm(), {size_t(p.waves()), size_t(p.profile.num_sms), size_t(kInstructionWords)});
      })
      .def("table_global", [](const Program& p) {
        return to_numpy(p.table_global(), {p.instructions.size(), size_t(kInstructionWords)});
      })
      .def("instruction", [](const Program& p, int64_t i) {
        if (i < 0 || i >= static_cast<int64_t>(p.instructions.size()))
          throw nb::index_error(("instruction index " + std::to_string(i) + " out of range").c_str());
        return instruction_dict(p.instructions[i]);
      })
      .def("format", &format_schedule);

  m.def("schedule",
        [](const DAG& dag, const Profile& profile, int cluster_size, bool icode_per_tensor_tuple, int drop_barrier) {
          ScheduleOptions o;
          o.profile = profile;
          o.cluster_size = cluster_size;
          o.icode_per_tensor_tuple = icode_per_tensor_tuple;
          o.drop_barrier = drop_barrier;
          nb::gil_scoped_release release;
          return schedule(dag, o);
        },
        nb::arg("dag"), nb::arg("profile"), nb::arg("cluster_size") = 2, nb::arg("icode_per_tensor_tuple") = false,
        nb::arg("drop_barrier") = -1,
        "Runs the four scheduler phases (seed §04) on a traced DAG. Raises CompileError.");
}
