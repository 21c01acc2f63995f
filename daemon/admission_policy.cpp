#include "admission_policy.hpp"

namespace mqx::daemon {

std::uint64_t AdmissionPolicy::demandOf(const QueryDemand& query) const {
  return kind == AdmissionKind::Peak ? query.peak : query.weighted;
}

bool AdmissionPolicy::fits(std::size_t count, std::uint64_t used, const QueryDemand& query,
                           std::uint64_t deviceCapacity, std::uint32_t device) const {
  if (kind == AdmissionKind::Fix) return count < fixN;
  if (kind == AdmissionKind::Adaptive && limits && count >= limits->of(device)) return false;
  const std::uint64_t demand = demandOf(query);
  return count == 0 || (used <= deviceCapacity && demand <= deviceCapacity - used);
}

std::vector<std::uint32_t> AdmissionPolicy::admit(const std::vector<QueryDemand>& running,
                                                  const std::vector<QueryDemand>& waiting) const {
  std::vector<std::uint32_t> admitted;
  std::size_t count = running.size();
  std::uint64_t used = 0;
  for (const auto& query : running)
    used += demandOf(query);
  for (const auto& query : waiting) {
    if (!fits(count, used, query, capacity)) break; // FIFO: nobody overtakes the first postponed query
    admitted.push_back(query.id);
    used += demandOf(query);
    ++count;
  }
  return admitted;
}

} // namespace mqx::daemon
