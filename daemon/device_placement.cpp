#include "device_placement.hpp"

#include <optional>

#include "ipc/node_state.hpp"

namespace mqx::daemon {

std::vector<Placed> DevicePlacement::admit(const std::vector<QueryDemand>& running,
                                           const std::vector<QueryDemand>& waiting) {
  const std::uint32_t devices = deviceCount();
  std::vector<DeviceLoad> load(devices);
  for (const QueryDemand& query : running)
    if (query.device < devices) load[query.device].add(policy_, query);
  // A device an earlier postponed query waits for: no later query starts there.
  std::vector<bool> blocked(devices);
  std::vector<Placed> placed;
  for (const QueryDemand& query : waiting) {
    std::vector<std::uint32_t> candidates;
    if (query.device != ipc::kAnyDevice) {
      if (query.device >= devices) continue;
      candidates = {query.device};
    } else if (kind_ == PlacementKind::RoundRobin) {
      candidates = {nextTurn_ % devices};
    } else {
      for (std::uint32_t device = 0; device < devices; ++device)
        candidates.push_back(device);
    }
    // Demand: the most room left after it, signed (an oversized query on an
    // idle device leaves less than nothing); the first of equals.
    std::optional<std::uint32_t> chosen;
    long double bestRoom = 0;
    for (const std::uint32_t device : candidates) {
      if (blocked[device] || !policy_.fits(load[device], query, capacities_[device], device)) continue;
      const long double room =
          static_cast<long double>(capacities_[device]) - load[device].demand - policy_.demandOf(query);
      if (!chosen || room > bestRoom) {
        chosen = device;
        bestRoom = room;
      }
    }
    if (!chosen) {
      for (const std::uint32_t device : candidates)
        blocked[device] = true;
      continue;
    }
    if (query.device == ipc::kAnyDevice && kind_ == PlacementKind::RoundRobin) nextTurn_ = (*chosen + 1) % devices;
    load[*chosen].add(policy_, query);
    placed.push_back({query.id, *chosen});
  }
  return placed;
}

std::uint32_t DevicePlacement::placeOnArrival(const std::vector<QueryDemand>& bound, const QueryDemand& query) {
  const std::uint32_t devices = deviceCount();
  if (query.device < devices) return query.device;
  if (kind_ == PlacementKind::RoundRobin) {
    const std::uint32_t device = nextTurn_ % devices;
    nextTurn_ = (device + 1) % devices;
    return device;
  }
  std::vector<std::size_t> count(devices);
  std::vector<long double> room(capacities_.begin(), capacities_.end());
  for (const QueryDemand& other : bound) {
    if (other.device >= devices) continue;
    ++count[other.device];
    room[other.device] -= policy_.demandOf(other);
  }
  std::uint32_t chosen = 0;
  for (std::uint32_t device = 1; device < devices; ++device)
    if (room[device] > room[chosen] || (room[device] == room[chosen] && count[device] < count[chosen])) chosen = device;
  return chosen;
}

} // namespace mqx::daemon
