#include "config_bindings.hpp"

#include <pybind11/stl.h>

#include "config/config_keys.hpp"

namespace py = pybind11;

namespace mqx::python {
namespace {

// Every key the parser knows as "section.key" -> value, typed as in Python
// (sizes in bytes, choices as their lower-case names): libmqx's own key
// table, so a new key of Config needs no line here.
py::dict asDictionary(const Config& config) { return py::cast(configValues(config)); }

} // namespace

Config loadConfigFrom(const std::optional<std::string>& path,
                      const std::optional<std::map<std::string, std::string>>& environment) {
  // libmqx's own loader: the same bounded file read, overrides and warnings
  // as mqxd and the queries.
  return loadConfig(environment.value_or(processEnvironment()), path);
}

void bindConfig(py::module_& m) {
  py::class_<Config>(m, "Config", R"doc(
A validated mqx configuration (configs/default.toml documents every key).

Made only by load_config() or parse_config(), which run the C++ parser: an
unknown key, a wrong type or a value out of range raises mqx.ConfigError
naming the key. Read a key with config["daemon.capacity"] or as_dict().
)doc")
      .def("as_dict", &asDictionary, "Every key as 'section.key' -> value (sizes in bytes, choices as names).")
      .def(
          "__getitem__",
          [](const Config& c, const std::string& key) {
            auto value = configValue(c, key);
            if (!value) throw py::key_error("mqx config: no key " + key);
            return *value;
          },
          py::arg("key"))
      .def_property_readonly(
          "instance", [](const Config& c) { return c.daemonInstance; }, "daemon.instance: the node's name suffix")
      .def_property_readonly(
          "capacity", [](const Config& c) { return c.daemonCapacity; },
          "daemon.capacity in bytes (0: memory.device_memory_limit, else sim.capacity)")
      .def_property_readonly(
          "admission", [](const Config& c) { return mqx::toString(c.admission); },
          "daemon.admission: weight, peak or fix")
      .def("__repr__", [](const Config& c) {
        return "<mqx.Config instance='" + c.daemonInstance + "' admission=" + mqx::toString(c.admission) + ">";
      });

  m.def("load_config", &loadConfigFrom, py::arg("path") = py::none(), py::arg("environment") = py::none(),
        R"doc(
The configuration a process loads: the TOML file `path` (default: MQX_CONFIG),
then the MQX_<SECTION>_<KEY> overrides of `environment` (default: os.environ).
Raises mqx.ConfigError naming the key or file.
)doc");
  m.def(
      "parse_config", [](const std::string& text, const std::string& origin) { return parseConfig(text, origin); },
      py::arg("text"), py::arg("origin") = "config",
      "Parses TOML text (no environment overrides); `origin` names it in errors. Raises mqx.ConfigError.");
  m.def(
      "parse_size", [](const std::string& text, const std::string& key) { return parseSize(text, key); },
      py::arg("text"), py::arg("key") = "size",
      "Bytes of a size such as 4096, '512KiB', '8MiB', '2GiB'. Raises mqx.ConfigError naming `key`.");
}

} // namespace mqx::python
