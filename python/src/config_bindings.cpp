#include "config_bindings.hpp"

#include <pybind11/stl.h>

#include <fstream>
#include <sstream>

namespace py = pybind11;

namespace mqx::python {
namespace {

std::string readFile(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  if (!file) throw ConfigError("mqx config: " + key + ": cannot read '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

const char* toString(EvictionGranularity granularity) {
  return granularity == EvictionGranularity::Region ? "region" : "page";
}

const char* toString(ReferenceDetection detection) {
  switch (detection) {
  case ReferenceDetection::Auto: return "auto";
  case ReferenceDetection::Advice: return "advice";
  case ReferenceDetection::Scan: return "scan";
  case ReferenceDetection::All: return "all";
  }
  return "?";
}

const char* toString(BackendKind kind) {
  switch (kind) {
  case BackendKind::Auto: return "auto";
  case BackendKind::Cuda: return "cuda";
  case BackendKind::Sim: return "sim";
  }
  return "?";
}

const char* toString(LogLevel level) {
  switch (level) {
  case LogLevel::Error: return "error";
  case LogLevel::Warn: return "warn";
  case LogLevel::Info: return "info";
  case LogLevel::Debug: return "debug";
  case LogLevel::Trace: return "trace";
  }
  return "?";
}

// Every key of configs/default.toml as "section.key" -> value, typed as in
// Python (sizes in bytes, choices as their lower-case names).
py::dict asDictionary(const Config& c) {
  py::dict d;
  d["memory.page_size"] = c.pageSize;
  d["memory.device_memory_limit"] = c.deviceMemoryLimit;
  d["memory.swap_buffer_limit"] = c.swapBufferLimit;
  d["memory.pinned_swap"] = c.pinnedSwap;
  d["policy.replacement"] = mqx::toString(c.replacement);
  d["policy.latency_factor"] = c.latencyFactor;
  d["policy.eviction_granularity"] = toString(c.evictionGranularity);
  d["policy.random_seed"] = c.randomSeed;
  d["optimizations.lazy_transfer"] = c.lazyTransfer;
  d["optimizations.copy_on_write"] = c.copyOnWrite;
  d["optimizations.cow_min_bytes"] = c.cowMinBytes;
  d["optimizations.reference_detection"] = toString(c.referenceDetection);
  d["optimizations.access_advice"] = c.accessAdvice;
  d["optimizations.page_coherence"] = c.pageCoherence;
  d["backend.kind"] = toString(c.backend);
  d["backend.fence_coalesce_us"] = c.fenceCoalesceMicroseconds;
  d["sim.capacity"] = c.simCapacity;
  d["sim.granularity"] = c.simGranularity;
  d["sim.copy_bandwidth_gbps"] = c.simCopyBandwidthGBps;
  d["sim.device_bandwidth_gbps"] = c.simDeviceBandwidthGBps;
  d["sim.realtime"] = c.simRealtime;
  d["daemon.instance"] = c.daemonInstance;
  d["daemon.capacity"] = c.daemonCapacity;
  d["daemon.admission"] = mqx::toString(c.admission);
  d["daemon.fix_n"] = c.admissionFixN;
  d["daemon.liveness_interval_ms"] = c.livenessIntervalMilliseconds;
  d["daemon.eviction_timeout_ms"] = c.evictionTimeoutMilliseconds;
  d["daemon.demand_state_file"] = c.demandStateFile;
  d["daemon.allow_no_daemon"] = c.allowNoDaemon;
  d["log.level"] = toString(c.logLevel);
  return d;
}

} // namespace

Config loadConfigFrom(const std::optional<std::string>& path,
                      const std::optional<std::map<std::string, std::string>>& environment) {
  const auto variables = environment.value_or(processEnvironment());
  Config config;
  if (path) {
    config = parseConfig(readFile(*path, "path"), *path);
  } else if (auto it = variables.find("MQX_CONFIG"); it != variables.end() && !it->second.empty()) {
    config = parseConfig(readFile(it->second, "MQX_CONFIG"), it->second);
  }
  applyEnvironment(config, variables);
  return config;
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
            py::dict d = asDictionary(c);
            if (!d.contains(key)) throw py::key_error("mqx config: no key " + key);
            return py::object(d[py::str(key)]);
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
