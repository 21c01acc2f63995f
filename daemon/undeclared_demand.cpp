#include "undeclared_demand.hpp"

#include <algorithm>

namespace mqx::daemon {
namespace {

// Growth smaller than this is noise (a few pages loaded or freed), not a
// working set still being built: 1/16 of what is held, at least 64 MiB.
bool grew(std::uint64_t held, std::uint64_t peak) {
  const std::uint64_t step = std::max<std::uint64_t>(peak / 16, std::uint64_t{64} << 20);
  return held > peak && held - peak >= step;
}

} // namespace

void UndeclaredDemand::started(std::uint32_t slot, const std::string& name, double now) {
  if (slot >= slots_.size()) return;
  slots_[slot] = Measured{true, name, now, now, 0};
}

void UndeclaredDemand::ended(std::uint32_t slot) {
  if (slot < slots_.size()) slots_[slot] = Measured{};
}

void UndeclaredDemand::observe(std::uint32_t slot, std::uint64_t held, double now) {
  if (slot >= slots_.size() || !slots_[slot].active) return;
  Measured& query = slots_[slot];
  if (grew(held, query.peak) || (query.peak == 0 && held > 0)) query.lastGrowth = now;
  query.peak = std::max(query.peak, held);
}

bool UndeclaredDemand::settled(std::uint32_t slot, double now) const {
  if (slot >= slots_.size() || !slots_[slot].active) return false;
  const Measured& query = slots_[slot];
  if (query.peak == 0) return now - query.started >= options_.idleSeconds;
  return now - query.lastGrowth >= options_.settleSeconds;
}

std::optional<std::uint64_t> UndeclaredDemand::runningDemand(std::uint32_t slot, std::uint64_t deviceCapacity,
                                                             double now) const {
  if (slot >= slots_.size() || !slots_[slot].active) return std::nullopt;
  return settled(slot, now) ? slots_[slot].peak : std::max(slots_[slot].peak, deviceCapacity);
}

std::optional<std::uint64_t> UndeclaredDemand::estimateFor(const std::string& name, double now) const {
  std::optional<std::uint64_t> estimate;
  for (std::uint32_t slot = 0; slot < slots_.size(); ++slot)
    if (slots_[slot].active && slots_[slot].name == name && settled(slot, now))
      estimate = std::max(estimate.value_or(0), slots_[slot].peak);
  return estimate;
}

} // namespace mqx::daemon
