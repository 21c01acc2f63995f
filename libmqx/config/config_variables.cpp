// The environment's MQX_* variables that name no configuration key: the
// project's own (otherVariables) pass, any other is warned about once, with
// the closest key's variable when one is close.
#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "common/log.hpp"
#include "config/config.hpp"
#include "config/config_names.hpp"

namespace mqx {
namespace {

// The project's MQX_* environment variables that are not configuration keys:
// unknownVariables warns about every other MQX_* variable that names no key,
// so a variable the project starts to read belongs here.
const std::set<std::string>& otherVariables() {
  static const std::set<std::string> names = {
      "MQX_CONFIG",                  // the configuration file (loadConfig)
      "MQX_LIBRARY",                 // mqx-run: the libmqx.so it preloads
      "MQX_QUERY_SLOT",              // mqx-run to its query: the admission record
      "MQX_AWAIT_ADMISSION",         // mqx-run to a query started before admission: its pid
      "MQX_BIN_DIR",                 // python/mqx/binaries.py: where mqxd and mqx-run are
      "MQX_BUILD_DIR",               // scripts/build, scripts/test, scripts/demo
      "MQX_JOBS",                    // scripts/build, scripts/test
      "MQX_GPU_BUILD",               // tools/gpu-check, tools/gpu-samples
      "MQX_REBUILD",                 // tools/gpu-samples
      "MQX_GPU_CHECK_SAMPLES",       // tools/gpu-check
      "MQX_GPU_CHECK_PYTHON",        // tools/gpu-check
      "MQX_SAMPLES_BUILD",           // tools/gpu-samples
      "MQX_SAMPLES_SKIP",            // tools/gpu-samples
      "MQX_CUDA_SAMPLES",            // scripts/test: where the cuda-samples are
      "MQX_CUDA_SAMPLES_LIMIT",      // scripts/test
      "MQX_SOAK_LONG",               // tests/faults/ssb_soak_test
      "MQX_SOAK_ROUNDS",             // tests/faults/ssb_soak_test
      "MQX_SOAK_RESULTS",            // tests/faults/ssb_soak_test
      "MQX_SSB_SOAK_DATA",           // tests/faults/ssb_soak_test
      "MQX_COMMIT",                  // bench/ssb/experiments
      "MQX_PIP_BUILD_DIR",           // python/setup.py
      "MQX_PIP_CMAKE_ARGS",          // python/setup.py
      "MQX_PIP_JOBS",                // python/setup.py
      "MQX_PIP_SOURCE_DIR",          // python/setup.py
      "MQX_WHEEL_PYTHON",            // tests/scripts/wheel_test.sh
      "MQX_WHEEL_BUILD_DIR",         // tests/scripts/wheel_test.sh
      "MQX_FAULT_SEED",              // tests/faults
      "MQX_SSB_GPU_TEST_DATA",       // tests/ssb_gpu
      "MQX_TEST_VERBOSE",            // tests/unit/differential_test
      "MQX_TEST_LOG",                // tests/unit/differential_test
      "MQX_TEST_CHECK_EVERY_STEP",   // tests/unit/differential_test
      "MQX_DIFFERENTIAL_SEQUENCES",  // tests/unit/differential_test
      "MQX_DIFFERENTIAL_FIRST_SEED", // tests/unit/differential_test
      "MQX_DIFFERENTIAL_STATISTICS", // tests/unit/differential_test
      "MQX_PEERS_DEVICE_GIB",        // tools/gpu-peers
      "MQX_ROUTES_FACTOR",           // tools/gpu-routes
      "MQX_ROUTES_ONLY",             // tools/gpu-routes
      "MQX_GPU_JOBS_COUNT",          // tools/gpu-jobs
      "MQX_GPU_JOBS_FRACTION",       // tools/gpu-jobs
      "MQX_GPU_JOBS_PASSES",         // tools/gpu-jobs
      "MQX_GPU_OPEN_GRID_SECONDS",   // tools/gpu-open-grid
      "MQX_PEERS_PYTHON",            // tools/gpu-peers
      "MQX_PEERS_STEPS",             // tools/gpu-peers
      "MQX_PEERS_TIMEOUT",           // tools/gpu-peers
      "MQX_REGIME_CAPACITY",         // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_CDR_FRACTION",     // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_CDR_QUERIES",      // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_CDR_REPEAT",       // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_DATA",             // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_OPEN_COUNT",       // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_OPEN_QUERIES",     // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_OPEN_RATE",        // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_PAIRS",            // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_REPEAT",           // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_SF",               // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_SEEDS",            // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_ADMISSIONS",       // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_OPEN_ROUNDS",      // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_ABLATIONS",        // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_ABLATION_ROUNDS",  // bench/ssb/experiments/run-gpu-regime
      "MQX_REGIME_TAG",              // bench/ssb/experiments/run-gpu-regime
      "MQX_OPEN_TRACE_DATA",         // tools/open-trace (ssb_pipeline.open_trace)
      "MQX_OPEN_TRACE_RATE",         // tools/open-trace
      "MQX_OPEN_TRACE_SEED",         // tools/open-trace
      "MQX_DEPS_SKIP_OPTIONAL",      // scripts/install-deps (its tests)
  };
  return names;
}

std::size_t editDistance(const std::string& from, const std::string& to) {
  std::vector<std::size_t> previous(to.size() + 1), current(to.size() + 1);
  for (std::size_t j = 0; j <= to.size(); ++j)
    previous[j] = j;
  for (std::size_t i = 1; i <= from.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= to.size(); ++j)
      current[j] =
          std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (from[i - 1] == to[j - 1] ? 0 : 1)});
    std::swap(previous, current);
  }
  return previous[to.size()];
}

// The key variable closest to a misspelled `name`, when one is close (a
// quarter of its letters or fewer changed); else "".
std::string closestVariable(const std::string& name) {
  std::string best;
  std::size_t bestDistance = name.size() / 4 + 1;
  for (const std::string& key : config_detail::configKeys()) {
    const std::string variable = config_detail::variableOf(key);
    if (const std::size_t distance = editDistance(name, variable); distance < bestDistance) {
      best = variable;
      bestDistance = distance;
    }
  }
  return best;
}

} // namespace

std::vector<std::string> unknownVariables(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> unknown;
  for (const auto& entry : environment) {
    // Not a structured binding: clang 14 (the fuzzers' compiler) cannot
    // capture one in a lambda.
    const std::string& name = entry.first;
    if (!name.starts_with("MQX_") || otherVariables().contains(name)) continue;
    const bool namesASection =
        std::any_of(config_detail::sectionPrefixes().begin(), config_detail::sectionPrefixes().end(),
                    [&](const auto& prefix) { return name.starts_with(prefix.first); });
    if (!namesASection) unknown.push_back(name);
  }
  return unknown;
}

// Each unknown variable is reported once per process, however often the
// process loads its configuration (libmqx.so does, from the hooks and from
// the advice API).
void warnAboutUnknownVariables(const std::map<std::string, std::string>& environment, LogLevel level) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  for (const std::string& name : unknownVariables(environment)) {
    {
      std::lock_guard lock(mutex);
      if (!warned.insert(name).second) continue;
    }
    if (static_cast<int>(level) < static_cast<int>(LogLevel::Warn)) continue;
    const std::string closest = closestVariable(name);
    writeLog(LogLevel::Warn,
             config_detail::oneLine(fmt::format("mqx config: {}: names no configuration key, ignored{}", name,
                                                closest.empty() ? "" : " (did you mean " + closest + "?)")));
  }
}

} // namespace mqx
