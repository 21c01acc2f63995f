#include "demand_history.hpp"

#include <unistd.h>

#include <sstream>

#include "common/files.hpp"
#include "common/log.hpp"

namespace mqx::daemon {

DemandHistory::DemandHistory(std::string path) : path_(std::move(path)) {
  std::string error;
  const auto text = readRegularFile(path_, kMaxDemandHistoryBytes, "a demand history", &error);
  if (!text) {
    // Absent is the first run; anything else is said, and the history starts empty.
    if (::access(path_.c_str(), F_OK) == 0) log(LogLevel::Warn, "demand history not read: {}", error);
    return;
  }
  std::istringstream file(*text);
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
  std::string text;
  for (const auto& [query, demand] : demands_)
    text += query + ' ' + std::to_string(demand) + '\n';
  if (const std::string error = writeFileReplacing(path_, text, 0600); !error.empty())
    log(LogLevel::Warn, "cannot save the demand history: {}", error);
}

} // namespace mqx::daemon
