// Named measurements of one benchmark run and their JSON form. A child
// process saves its results as a JSON object; the parent loads them back and
// writes one document (gpuBenchJson) with every run's.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "../common/json_output.hpp"

namespace mqx::bench {

class Results {
public:
  void set(const std::string& name, double value) { numbers_[name] = value; }
  void note(const std::string& name, const std::string& text) { texts_[name] = text; }
  // NaN when absent.
  double get(const std::string& name) const;
  bool has(const std::string& name) const { return numbers_.count(name) != 0; }
  // Empty when absent.
  std::string text(const std::string& name) const {
    auto it = texts_.find(name);
    return it != texts_.end() ? it->second : std::string();
  }

  // {"name": "text" ..., "name": value ...}: texts, then numbers, each by
  // name; a number that is not finite is null (NaN again when loaded).
  Json toJson() const;
  bool save(const std::string& path) const;
  // Adds what `path` holds; false, with a line on stderr naming the file,
  // when it is unreadable or not such an object.
  bool load(const std::string& path);

private:
  std::map<std::string, double> numbers_;
  std::map<std::string, std::string> texts_;
};

// What mqx-gpu-bench's parent writes (bench/results/gpu-bench-*.json): the
// runs it started, each absent (null) when that run failed.
struct GpuBenchRun {
  std::string date;
  std::string commit;
  std::size_t transferBytes = 0;
  int repetitions = 0;
  std::string memoryLimit; // MQX_MEMORY_DEVICE_MEMORY_LIMIT of the mqx runs
  Results native;          // also names the device
  std::optional<Results> mqx;
  std::optional<Results> mqxPage64MiB;
  Results derived;
};

Json gpuBenchJson(const GpuBenchRun& run);

} // namespace mqx::bench
