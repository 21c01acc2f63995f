#include "ipc/manager_activity.hpp"

namespace mqx::ipc {

ClientActivity activityOf(const ManagerUsage& usage) {
  ClientActivity activity;
  activity.bytesToDevice = usage.statistics.bytesToDevice;
  activity.bytesToHost = usage.statistics.bytesToHost;
  activity.bytesWrittenBack = usage.statistics.bytesWrittenBack;
  activity.evictions = usage.statistics.evictions;
  activity.launches = usage.statistics.launches;
  activity.swapUsedBytes = usage.swapUsedBytes;
  activity.swapReservedBytes = usage.swapReservedBytes;
  activity.evictionNanoseconds = usage.statistics.evictionNanoseconds;
  return activity;
}

NodeMembership::ActivitySource activitySourceOf(const MemoryManager& manager) {
  return [&manager]() -> std::optional<ClientActivity> {
    const auto usage = manager.tryUsage();
    if (!usage) return std::nullopt;
    return activityOf(*usage);
  };
}

} // namespace mqx::ipc
