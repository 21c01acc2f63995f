#include "ipc/node_snapshot.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace mqx::ipc {

const char* toString(ClientState state) {
  switch (state) {
  case ClientState::Free: return "free";
  case ClientState::Waiting: return "waiting";
  case ClientState::Running: return "running";
  case ClientState::Memory: return "memory";
  }
  return "unknown";
}

NodeSnapshot snapshotOf(const NodeState& node) {
  NodeSnapshot snapshot;
  snapshot.daemonPid = node.daemonPid;
  snapshot.capacity = node.capacityOf();
  snapshot.usedBytes = node.usedBytes();
  for (std::uint32_t i = 0; i < std::min(node.deviceCount, kMaxDevices); ++i)
    snapshot.devices.push_back({i, node.identityOf(i), node.capacityOf(i), node.usedBytes(i)});
  snapshot.reclaimedBytes = node.reclaimedBytes;
  snapshot.deadClients = node.deadClients;
  snapshot.evictionRequestsServed = node.evictionRequestsServed;
  snapshot.bytesEvictedForOthers = node.bytesEvictedForOthers;
  snapshot.activity = node.retiredActivity;
  snapshot.activity.swapUsedBytes = snapshot.activity.swapReservedBytes = 0;
  for (std::uint32_t slot = 0; slot < kMaxClients; ++slot) {
    const ClientRecord& record = node.clients[slot];
    if (record.state == ClientState::Free) continue;
    ClientSnapshot client;
    client.slot = slot;
    client.state = record.state;
    client.pid = record.pid;
    client.name = std::string(record.name, strnlen(record.name, sizeof record.name));
    client.arrival = record.arrival;
    client.weightedDemand = record.weightedDemand;
    client.peakDemand = record.peakDemand;
    client.budgetHeld = record.budgetHeld;
    client.observedPeak = record.observedPeak;
    client.querySlot = record.querySlot < kMaxClients ? record.querySlot : kNoSlot;
    client.blockedOnMemory = record.blockedOnMemory != 0;
    client.activity = record.activity;
    if (record.device < snapshot.devices.size()) {
      client.device = record.device;
      client.deviceIdentity = snapshot.devices[record.device].identity;
      DeviceSnapshot& device = snapshot.devices[record.device];
      if (record.state == ClientState::Running) {
        ++device.runningQueries;
        device.runningWeightedDemand += record.weightedDemand;
      }
      device.waitingQueries += record.state == ClientState::Waiting ? 1 : 0;
      device.memoryClients += record.state == ClientState::Memory ? 1 : 0;
    }
    snapshot.activity.addCounters(record.activity);
    snapshot.activity.swapUsedBytes += record.activity.swapUsedBytes;
    snapshot.activity.swapReservedBytes += record.activity.swapReservedBytes;
    snapshot.clients.push_back(std::move(client));
  }
  return snapshot;
}

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// Whether a query that may run on `candidates` competes with a client on
// `device` (kAnyDevice: not placed, it may run anywhere).
bool overlaps(std::uint32_t candidates, std::uint32_t device) {
  return candidates == kAnyDevice || device == kAnyDevice || candidates == device;
}

} // namespace

std::string describeAdmissionWait(const NodeSnapshot& node, std::uint32_t slot, AdmissionKind admission,
                                  unsigned fixN) {
  const auto self = std::find_if(node.clients.begin(), node.clients.end(),
                                 [&](const ClientSnapshot& client) { return client.slot == slot; });
  if (self == node.clients.end()) return "its record is gone";
  if (self->state == ClientState::Running) return "admitted";
  // The devices it may run on: the one it asked for, else every one.
  const std::uint32_t candidates = self->device;
  std::uint64_t held[kMaxClients] = {};
  // A process of the query that is stopped: the one to resume, which is
  // not the query record's own pid (mqx-run) but its child's.
  pid_t stoppedProcess[kMaxClients] = {};
  for (const ClientSnapshot& client : node.clients)
    if (client.state == ClientState::Memory && client.querySlot < kMaxClients) {
      held[client.querySlot] += client.budgetHeld;
      if (stoppedProcess[client.querySlot] == 0 && processStopped(client.pid))
        stoppedProcess[client.querySlot] = client.pid;
    }
  // What mqxd counts against each device's capacity (NodeDaemon::admitPostponed).
  const bool byPeak = admission == AdmissionKind::Peak;
  std::vector<std::uint64_t> runningDemand(node.devices.size());
  std::vector<std::uint32_t> runningCount(node.devices.size());
  std::uint32_t earlier = 0;
  std::vector<std::pair<std::uint64_t, std::string>> holders;
  const bool severalDevices = node.devices.size() > 1;
  auto on = [&](const ClientSnapshot& client) {
    return severalDevices ? fmt::format(" on {}", client.deviceIdentity) : std::string();
  };
  for (const ClientSnapshot& client : node.clients) {
    if (client.state == ClientState::Waiting && client.arrival < self->arrival && overlaps(candidates, client.device))
      ++earlier;
    if (client.state == ClientState::Running && client.device < node.devices.size()) {
      const std::uint64_t demand = std::max(byPeak ? client.peakDemand : client.weightedDemand, held[client.slot]);
      runningDemand[client.device] += demand;
      ++runningCount[client.device];
      if (!overlaps(candidates, client.device)) continue;
      std::string stopped;
      if (processStopped(client.pid))
        stopped = fmt::format(", STOPPED: kill -CONT {} resumes it", client.pid);
      else if (stoppedProcess[client.slot] != 0)
        stopped = fmt::format("; its process {} is STOPPED: kill -CONT {} resumes it", stoppedProcess[client.slot],
                              stoppedProcess[client.slot]);
      // Under adaptive, mqxd counts a query that declares nothing by what it
      // measures of it (docs/daemon.md), not by the 0 in its record.
      const bool declaresNothing =
          admission == AdmissionKind::Adaptive && client.weightedDemand == 0 && client.peakDemand == 0;
      holders.emplace_back(
          demand,
          fmt::format("'{}' (pid {}{}){} {}, holds {}", client.name, client.pid, stopped, on(client),
                      declaresNothing ? std::string("declares no demand") : fmt::format("demand {}", mib(demand)),
                      mib(held[client.slot])));
    } else if (client.state == ClientState::Memory && client.querySlot == kNoSlot && client.budgetHeld != 0 &&
               overlaps(candidates, client.device)) {
      holders.emplace_back(client.budgetHeld,
                           fmt::format("pid {} outside any query{}{} holds {}", client.pid,
                                       processStopped(client.pid)
                                           ? fmt::format(" (STOPPED: kill -CONT {} resumes it)", client.pid)
                                           : std::string(),
                                       on(client), mib(client.budgetHeld)));
    }
  }
  std::sort(holders.begin(), holders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string why;
  const std::uint64_t need = byPeak ? self->peakDemand : self->weightedDemand;
  // Under adaptive, mqxd counts a query that declares nothing as its whole
  // device until one of its name is measured (docs/daemon.md, "Queries that
  // declare nothing"); "it needs 0 (it fits)" would say the opposite.
  const bool undeclared = admission == AdmissionKind::Adaptive && self->weightedDemand == 0 && self->peakDemand == 0;
  const std::string undeclaredWhy =
      "it declares no demand, and mqxd counts it as its whole device until a query of its name is measured";
  if (!severalDevices) {
    const std::uint64_t capacity = node.devices.empty() ? node.capacity : node.devices[0].capacity;
    const std::uint64_t running = runningDemand.empty() ? 0 : runningDemand[0];
    if (admission == AdmissionKind::Fix) {
      why =
          fmt::format("{} of at most {} queries run (admission fix)", runningCount.empty() ? 0 : runningCount[0], fixN);
    } else if (undeclared) {
      why = undeclaredWhy;
    } else {
      const std::uint64_t free = capacity > running ? capacity - running : 0;
      why = fmt::format("it needs {} ({} demand), {} of the node's {} are free", mib(need),
                        byPeak ? "peak" : "weighted", mib(free), mib(capacity));
      if (need <= free)
        why += admission == AdmissionKind::Adaptive
                   ? " (it fits; the running queries are at the adaptive concurrency limit)"
                   : " (it fits)";
    }
  } else {
    why = admission == AdmissionKind::Fix ? fmt::format("at most {} queries run on a device (admission fix)", fixN)
          : undeclared                    ? undeclaredWhy
                       : fmt::format("it needs {} ({} demand)", mib(need), byPeak ? "peak" : "weighted");
    why += candidates == kAnyDevice ? "; on the node's devices: " : "; on the device it asked for: ";
    bool first = true;
    for (const DeviceSnapshot& device : node.devices) {
      if (!overlaps(candidates, device.index)) continue;
      why += first ? "" : ", ";
      first = false;
      if (admission == AdmissionKind::Fix) {
        why += fmt::format("{} {} running", device.identity, runningCount[device.index]);
      } else {
        const std::uint64_t running = runningDemand[device.index];
        const std::uint64_t free = device.capacity > running ? device.capacity - running : 0;
        why += fmt::format("{} {} of {} free{}", device.identity, mib(free), mib(device.capacity),
                           need <= free && !undeclared ? " (it fits)" : "");
      }
    }
  }
  if (earlier != 0)
    why += fmt::format("; {} earlier {} first (arrival order)", earlier, earlier == 1 ? "query waits" : "queries wait");
  if (holders.empty()) {
    why += "; nothing runs (mqxd has not answered yet)";
  } else {
    why += "; held by ";
    for (std::size_t i = 0; i < holders.size(); ++i)
      why += (i == 0 ? "" : ", ") + holders[i].second;
  }
  return why;
}

} // namespace mqx::ipc
