#include "admission_policy.hpp"

namespace mqx::daemon {

std::uint64_t AdmissionPolicy::demandOf(const QueryDemand& query) const {
  return kind == AdmissionKind::Peak ? query.peak : query.weighted;
}

void DeviceLoad::add(const AdmissionPolicy& policy, const QueryDemand& query) {
  ++count;
  demand += policy.demandOf(query);
  peaks += query.peak;
}

bool AdmissionPolicy::fits(const DeviceLoad& running, const QueryDemand& query, std::uint64_t deviceCapacity,
                           std::uint32_t device) const {
  if (kind == AdmissionKind::Fix) return running.count < fixN;
  const bool adaptive = kind == AdmissionKind::Adaptive;
  if (adaptive && limits && running.count >= limits->of(device)) return false;
  if (running.count == 0) return true; // a query larger than the device starts when nothing else runs
  if (adaptive && peakOvercommit > 0 &&
      static_cast<long double>(running.peaks) + query.peak > static_cast<long double>(peakOvercommit) * deviceCapacity)
    return false;
  const std::uint64_t demand = demandOf(query);
  return running.demand <= deviceCapacity && demand <= deviceCapacity - running.demand;
}

std::vector<std::uint32_t> AdmissionPolicy::admit(const std::vector<QueryDemand>& running,
                                                  const std::vector<QueryDemand>& waiting) const {
  std::vector<std::uint32_t> admitted;
  DeviceLoad load;
  for (const auto& query : running)
    load.add(*this, query);
  for (const auto& query : waiting) {
    if (!fits(load, query, capacity)) break; // FIFO: nobody overtakes the first postponed query
    admitted.push_back(query.id);
    load.add(*this, query);
  }
  return admitted;
}

} // namespace mqx::daemon
