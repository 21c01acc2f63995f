// DemandHistory: what mqxd learned about queries run without a plan: the
// most device memory each named query's processes held at once in its last
// run (paper §5: demand from earlier runs when nothing is declared). A small
// text file, one "name bytes" line per query, rewritten atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mqx::daemon {

// Far more than the few thousand names a node sees; a larger file is not read.
inline constexpr std::size_t kMaxDemandHistoryBytes = std::size_t{4} << 20;

class DemandHistory {
public:
  explicit DemandHistory(std::string path);
  std::optional<std::uint64_t> demandOf(const std::string& name) const;
  void record(const std::string& name, std::uint64_t bytes); // and saves
  const std::string& path() const { return path_; }

private:
  std::string path_;
  std::map<std::string, std::uint64_t> demands_;
};

} // namespace mqx::daemon
