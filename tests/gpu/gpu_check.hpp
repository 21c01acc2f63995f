// Helpers shared by the GPU test programs: checks that exit non-zero with a
// message, the configured device memory limit, and a look at libmqx through
// its C exports (absent when the program runs natively).
#pragma once

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define GPU_CHECK(condition)                                                                                           \
  do {                                                                                                                 \
    if (!(condition)) {                                                                                                \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition);                               \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

#define GPU_CHECK_EQ(actual, expected)                                                                                 \
  do {                                                                                                                 \
    auto gpu_a_ = (actual);                                                                                            \
    auto gpu_e_ = (expected);                                                                                          \
    if (!(gpu_a_ == gpu_e_)) {                                                                                         \
      std::fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #actual, #expected,           \
                   static_cast<long long>(gpu_a_), static_cast<long long>(gpu_e_));                                    \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

namespace gpu_test {

// MQX_MEMORY_DEVICE_MEMORY_LIMIT as bytes ("256MiB", "1GiB", "1048576");
// 256 MiB when unset, so that a native run uses the same sizes.
inline std::size_t deviceLimit() {
  const char* text = std::getenv("MQX_MEMORY_DEVICE_MEMORY_LIMIT");
  if (text == nullptr || *text == '\0') return std::size_t{256} << 20;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  std::string unit(end);
  std::size_t multiplier = 1;
  if (unit == "KiB") multiplier = std::size_t{1} << 10;
  if (unit == "MiB") multiplier = std::size_t{1} << 20;
  if (unit == "GiB") multiplier = std::size_t{1} << 30;
  return static_cast<std::size_t>(value * static_cast<double>(multiplier));
}

// Whether libmqx is preloaded and manages this process.
inline bool mqxActive() {
  using Active = int (*)();
  auto active = reinterpret_cast<Active>(dlsym(RTLD_DEFAULT, "mqx_active"));
  return active != nullptr && active() == 1;
}

inline bool mqxPreloaded() { return dlsym(RTLD_DEFAULT, "mqx_active") != nullptr; }

// One counter of libmqx's statistics ("evictions", "bytes_written_back", ...);
// -1 when libmqx is absent, its answer is not JSON or the counter unknown.
inline long long mqxStatistic(const char* name) {
  using StatisticsJson = std::size_t (*)(char*, std::size_t);
  auto statisticsJson = reinterpret_cast<StatisticsJson>(dlsym(RTLD_DEFAULT, "mqx_statistics_json"));
  if (statisticsJson == nullptr) return -1;
  std::vector<char> text(statisticsJson(nullptr, 0) + 1); // the length, then the text
  statisticsJson(text.data(), text.size());
  const nlohmann::json counters = nlohmann::json::parse(text.data(), nullptr, /*allow_exceptions=*/false);
  const auto counter = counters.find(name);
  return counter != counters.end() && counter->is_number_integer() ? counter->get<long long>() : -1;
}

// A deterministic 32-bit pattern for element i of buffer `seed`.
inline std::uint32_t pattern(std::uint32_t seed, std::uint64_t i) {
  return seed * 0x9E3779B9U ^ static_cast<std::uint32_t>(i * 2654435761ULL);
}

} // namespace gpu_test
