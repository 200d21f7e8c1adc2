// nanobind module megakittens._C: one bind_* function per pipeline stage.
#pragma once
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_ir(nb::module_&);         // bind_ir.cpp: tensors, FX graph records, DAG, errors
void bind_schedule(nb::module_&);   // bind_schedule.cpp: profiles, schedule(), Program
void bind_reference(nb::module_&);  // bind_reference.cpp: interpret()
void bind_runtime(nb::module_&);    // bind_runtime.cpp: GPU JIT and launch (src/runtime/)
void bind_fallback(nb::module_&);   // bind_fallback.cpp: op units and device bodies for fallback="eager"
