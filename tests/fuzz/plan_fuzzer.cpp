// Fuzz target: the plan-file parser of mqx-run (daemon/query_plan). A bad
// plan must end in a ConfigError; a plan that parses must give demands that
// make sense (paper §5: the weighted demand m = Σ tᵢmᵢ / Σ tᵢ lies between
// the smallest and the largest operator's memory, the peak is the largest).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/config.hpp"
#include "query_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mqx::setLogLevel(mqx::LogLevel::Error);
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto plan = mqx::daemon::QueryPlan::parse(text, "fuzz-plan.toml");
    if (plan.operators.empty()) std::abort();
    std::uint64_t smallest = plan.operators.front().memory, largest = 0;
    for (const auto& op : plan.operators) {
      smallest = std::min(smallest, op.memory);
      largest = std::max(largest, op.memory);
    }
    const std::uint64_t weighted = plan.weightedDemand();
    if (plan.peakDemand() != largest || weighted > largest || weighted < smallest) {
      std::fprintf(stderr, "plan demands out of order: weighted %llu, operators in [%llu, %llu], peak %llu\n",
                   static_cast<unsigned long long>(weighted), static_cast<unsigned long long>(smallest),
                   static_cast<unsigned long long>(largest), static_cast<unsigned long long>(plan.peakDemand()));
      std::abort();
    }
  } catch (const mqx::ConfigError& error) {
    if (std::string(error.what()).find('\n') != std::string::npos) std::abort();
  }
  return 0;
}
