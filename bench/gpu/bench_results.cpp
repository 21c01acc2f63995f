#include "bench_results.hpp"

#include <cstdio>
#include <fstream>
#include <limits>

namespace mqx::bench {

double Results::get(const std::string& name) const {
  auto it = numbers_.find(name);
  return it != numbers_.end() ? it->second : std::numeric_limits<double>::quiet_NaN();
}

Json Results::toJson() const {
  Json object = Json::object();
  for (const auto& [name, text] : texts_)
    object[name] = text;
  for (const auto& [name, value] : numbers_)
    object[name] = value; // printed as null when not finite
  return object;
}

bool Results::save(const std::string& path) const { return writeJsonFile(path, toJson()); }

bool Results::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  Json object;
  try {
    object = Json::parse(in);
  } catch (const Json::exception& error) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), error.what());
    return false;
  }
  if (!object.is_object()) {
    std::fprintf(stderr, "%s: not a JSON object of results but %s\n", path.c_str(), object.type_name());
    return false;
  }
  for (const auto& [name, value] : object.items()) {
    if (value.is_string()) {
      texts_[name] = value.get<std::string>();
    } else if (value.is_number()) {
      numbers_[name] = value.get<double>();
    } else if (value.is_null()) {
      numbers_[name] = std::numeric_limits<double>::quiet_NaN();
    } else {
      std::fprintf(stderr, "%s: \"%s\" is neither a text nor a number but %s\n", path.c_str(), name.c_str(),
                   value.type_name());
      return false;
    }
  }
  return true;
}

Json gpuBenchJson(const GpuBenchRun& run) {
  auto optional = [](const std::optional<Results>& results) { return results ? results->toJson() : Json(); };
  return {{"benchmark", "mqx-gpu-bench"},
          {"device", run.native.text("device")},
          {"date", run.date},
          {"commit", run.commit},
          {"transfer_bytes", run.transferBytes},
          {"repetitions", run.repetitions},
          {"mqx_device_memory_limit", run.memoryLimit},
          {"native", run.native.toJson()},
          {"mqx", optional(run.mqx)},
          {"mqx_page_64MiB", optional(run.mqxPage64MiB)},
          {"derived", run.derived.toJson()}};
}

} // namespace mqx::bench
