// fallback="eager" (issue 6): what the front end's partitioner asks the compiler (docs/core-api.md).
#include <nanobind/stl/string.h>

#include "python/bind.h"
#include "schedule/program.h"
#include "trace/op_units.h"
#ifndef MK_NO_GPU_RUNTIME
#include "runtime/device_support.h"
#endif

using namespace mk;

void bind_fallback(nb::module_& m) {
  m.attr("OP_UNIT_FOLDED") = OpUnits::kFolded;
  m.attr("OP_UNIT_NOT_OP") = OpUnits::kNotOp;
  m.def("op_units",
        [](const FxGraph& g) {
          OpUnits u = op_units(g);
          nb::list owner, graphs;
          for (int o : u.owner) owner.append(o);
          for (auto& [k, unit] : u.graphs) graphs.append(nb::make_tuple(k, std::move(unit)));
          return nb::make_tuple(owner, graphs);
        },
        nb::arg("graph"),
        "(owner, units): per FX node its owning op (itself, the op a fusion folded it into, OP_UNIT_FOLDED "
        "for views and getitem, OP_UNIT_NOT_OP), and (index, FxGraph) for each op: the op alone as it would "
        "sit in a partition, producers as contiguous inputs. Raises CompileError.");
  m.def("gpu_missing_bodies",
        [](const Program& p) {
          nb::list out;
          for (const NodeSchedule& n : p.nodes) {
#ifdef MK_NO_GPU_RUNTIME
            const std::string why = "megakittens was built without the GPU runtime";
#else
            const std::string why = rt::missing_device_body(n.itype, p.profile);
#endif
            if (!why.empty()) out.append(nb::make_tuple(n.name, why));
          }
          return out;
        },
        nb::arg("program"),
        "(node name, reason) for every node of the Program whose IType (with its parameters) has no device "
        "body for the Program's profile; empty when the megakernel can run all of them.");
}
