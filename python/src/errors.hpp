// The C++ side of mqx.errors: exceptions the bindings throw, translated into
// the Python classes of python/mqx/errors.py (defined in Python so that they
// can have several bases, e.g. AdmissionTimeout is also a TimeoutError).
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>

namespace mqx::python {

struct DaemonNotRunning : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AdmissionTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Any other refusal of mqx or mqxd (mqx.MqxError).
struct MqxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Registers the translation of these and of mqx::ConfigError.
void bindErrors(pybind11::module_& module);

} // namespace mqx::python
