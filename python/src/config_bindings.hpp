// mqx.Config and its loaders: the C++ parser itself (libmqx/config), so that
// Python accepts and rejects exactly what the C++ side does.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <optional>
#include <string>

#include "config/config.hpp"

namespace mqx::python {

// The configuration a process would load from `environment` (MQX_CONFIG,
// then MQX_<SECTION>_<KEY> overrides); `path` replaces MQX_CONFIG. The
// process environment when `environment` is empty.
Config loadConfigFrom(const std::optional<std::string>& path,
                      const std::optional<std::map<std::string, std::string>>& environment);

void bindConfig(pybind11::module_& module);

} // namespace mqx::python
