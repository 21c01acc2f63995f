#include "admission_policy.hpp"

namespace mqx::daemon {

std::uint64_t AdmissionPolicy::demandOf(const QueryDemand& query) const {
  return kind == AdmissionKind::Peak ? query.peak : query.weighted;
}

std::vector<std::uint32_t> AdmissionPolicy::admit(const std::vector<QueryDemand>& running,
                                                  const std::vector<QueryDemand>& waiting) const {
  std::vector<std::uint32_t> admitted;
  std::size_t count = running.size();
  std::uint64_t used = 0;
  for (const auto& query : running)
    used += demandOf(query);
  for (const auto& query : waiting) {
    bool fits = false;
    if (kind == AdmissionKind::Fix) {
      fits = count < fixN;
    } else {
      const std::uint64_t demand = demandOf(query);
      fits = count == 0 || (used <= capacity && demand <= capacity - used);
      used += demand;
    }
    if (!fits) break; // FIFO: nobody overtakes the first postponed query
    admitted.push_back(query.id);
    ++count;
  }
  return admitted;
}

} // namespace mqx::daemon
