// mqx._mqx: the extension behind the Python package mqx (docs/python.md).
#include <pybind11/pybind11.h>

#include "config_bindings.hpp"
#include "daemon_bindings.hpp"
#include "errors.hpp"
#include "mqx/version.hpp"

#ifdef MQX_PYTHON_WITH_KERNELOPT
#include "kernelopt_bindings.hpp"
#endif

PYBIND11_MODULE(_mqx, module) {
  module.doc() = "mqx's C++ side: the mqxd client, configuration and kernelopt (see the package mqx).";
  mqx::python::bindErrors(module);
  mqx::python::bindConfig(module);
  mqx::python::bindDaemon(module);
#ifdef MQX_PYTHON_WITH_KERNELOPT
  mqx::python::bindKernelopt(module);
  module.attr("HAS_KERNELOPT") = true;
#else
  module.attr("HAS_KERNELOPT") = false;
#endif
  // Where the build put mqxd and mqx-run (mqx.binaries searches it).
  module.attr("BUILD_BIN_DIR") = MQX_BUILD_BIN_DIR;
  // The same version and commit as mqxd --version and mqx-run --version.
  module.attr("VERSION") = mqx::kVersion;
  module.attr("COMMIT") = mqx::kCommit;
}
