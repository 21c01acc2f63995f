#include "demand_history.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/log.hpp"

namespace mqx::daemon {

DemandHistory::DemandHistory(std::string path) : path_(std::move(path)) {
  std::ifstream file(path_);
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t bytes = 0;
    if (fields >> name >> bytes) demands_[name] = bytes;
  }
}

std::optional<std::uint64_t> DemandHistory::demandOf(const std::string& name) const {
  auto it = demands_.find(name);
  if (it == demands_.end()) return std::nullopt;
  return it->second;
}

void DemandHistory::record(const std::string& name, std::uint64_t bytes) {
  // Names become one whitespace-free token.
  if (name.empty() || name.find_first_of(" \t\n") != std::string::npos) return;
  demands_[name] = bytes;
  const std::string temporary = path_ + ".tmp";
  {
    std::ofstream file(temporary, std::ios::trunc);
    for (const auto& [query, demand] : demands_)
      file << query << ' ' << demand << '\n';
    if (!file) {
      log(LogLevel::Warn, "cannot write the demand history {}", temporary);
      return;
    }
  }
  std::rename(temporary.c_str(), path_.c_str());
}

} // namespace mqx::daemon
