#include "query_plan.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/files.hpp"
#include "common/weighted_demand.hpp"
#include "config/config.hpp"

namespace mqx::daemon {

std::uint64_t QueryPlan::weightedDemand() const {
  // Paper §5 through the one implementation (common/weighted_demand.hpp):
  // bounded by the smallest and the largest operator, whatever the times.
  WeightedDemand demand;
  for (const auto& op : operators)
    demand.add(op.time, op.memory);
  return demand.weighted();
}

std::uint64_t QueryPlan::peakDemand() const {
  std::uint64_t peak = 0;
  for (const auto& op : operators)
    peak = std::max(peak, op.memory);
  return peak;
}

QueryPlan QueryPlan::parse(const std::string& tomlText, const std::string& origin) {
  toml::table table;
  requireAsciiToml(tomlText, "mqx plan: " + origin);
  try {
    table = toml::parse(tomlText, origin);
  } catch (const toml::parse_error& error) {
    // One line: toml++ descriptions may quote a newline of the input.
    std::string description(error.description());
    std::replace(description.begin(), description.end(), '\n', ' ');
    throw ConfigError("mqx plan: " + origin + ": " + description);
  }
  QueryPlan plan;
  for (const auto& [key, node] : table) {
    if (key == "name") {
      auto name = node.value<std::string>();
      if (!name) throw ConfigError("mqx plan: " + origin + ": name: expected a string");
      plan.name = *name;
    } else if (key != "operator") {
      throw ConfigError("mqx plan: " + origin + ": unknown key " + std::string(key.str()));
    }
  }
  const toml::array* operators = table["operator"].as_array();
  if (operators == nullptr || operators->empty())
    throw ConfigError("mqx plan: " + origin + ": needs at least one [[operator]]");
  for (const auto& entry : *operators) {
    const toml::table* op = entry.as_table();
    if (op == nullptr) throw ConfigError("mqx plan: " + origin + ": [[operator]] must be tables");
    OperatorDemand demand;
    auto time = (*op)["time"].value<double>();
    if (!time || !std::isfinite(*time) || *time < 0)
      throw ConfigError("mqx plan: " + origin + ": operator.time: expected a non-negative number");
    demand.time = *time;
    const toml::node* memory = op->get("memory");
    if (memory == nullptr) throw ConfigError("mqx plan: " + origin + ": operator.memory missing");
    // as_integer, not value<int64_t>: toml++ converts a float such as 1e30
    // to an integer without a range check (undefined behaviour; fuzzing).
    if (const auto* bytes = memory->as_integer(); bytes != nullptr && bytes->get() >= 0)
      demand.memory = static_cast<std::uint64_t>(bytes->get());
    else if (auto text = memory->value<std::string>())
      demand.memory = parseSize(*text, origin + ": operator.memory");
    else
      throw ConfigError("mqx plan: " + origin + ": operator.memory: expected a size");
    for (const auto& [key, value] : *op)
      if (key != "time" && key != "memory")
        throw ConfigError("mqx plan: " + origin + ": unknown operator key " + std::string(key.str()));
    plan.operators.push_back(demand);
  }
  return plan;
}

QueryPlan QueryPlan::load(const std::string& path) {
  std::string error;
  const auto text = readRegularFile(path, kMaxPlanFileBytes, "a plan file", &error);
  if (!text) throw ConfigError("mqx plan: " + error);
  return parse(*text, path);
}

} // namespace mqx::daemon
