// The kernelopt functions on plain Python objects: device limits, the
// occupancy model, the kernel-level and batch-level launch optimizers and the
// Kernel Weaver fusion planner (docs/kernelopt.md). Resource sets are
// frozensets of names ("warps", "registers", "shared_memory", "blocks").
#pragma once

#include <pybind11/pybind11.h>

namespace mqx::python {

void bindKernelopt(pybind11::module_& module);

} // namespace mqx::python
