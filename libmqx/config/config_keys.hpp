// A Config's keys and values, read through the parser's own key table
// (config.cpp), so that a program that shows a configuration (mqx.Config in
// Python) lists every key the parser accepts without a list of its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/config.hpp"

namespace mqx {

// One key's value: sizes, counts and durations as integers, choices as their
// lower-case names, string lists (kernelopt.resizable_kernels) as vectors.
using ConfigValue = std::variant<bool, std::uint64_t, double, std::string, std::vector<std::string>>;

// Every key as "section.key" -> value, in key order.
std::map<std::string, ConfigValue> configValues(const Config& config);

// One key's value; nullopt for a key the parser does not know.
std::optional<ConfigValue> configValue(const Config& config, const std::string& key);

} // namespace mqx
