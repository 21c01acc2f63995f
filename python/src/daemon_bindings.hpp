// mqx.Client, mqx.status() and their result types: the client side of mqxd.
#pragma once

#include <pybind11/pybind11.h>

namespace mqx::python {

void bindDaemon(pybind11::module_& module);

} // namespace mqx::python
