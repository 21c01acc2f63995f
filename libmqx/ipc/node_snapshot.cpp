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
  snapshot.capacity = node.capacity;
  snapshot.usedBytes = node.usedBytes();
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
    snapshot.activity.addCounters(record.activity);
    snapshot.activity.swapUsedBytes += record.activity.swapUsedBytes;
    snapshot.activity.swapReservedBytes += record.activity.swapReservedBytes;
    snapshot.clients.push_back(std::move(client));
  }
  return snapshot;
}

namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

} // namespace

std::string describeAdmissionWait(const NodeSnapshot& node, std::uint32_t slot, AdmissionKind admission,
                                  unsigned fixN) {
  const auto self = std::find_if(node.clients.begin(), node.clients.end(),
                                 [&](const ClientSnapshot& client) { return client.slot == slot; });
  if (self == node.clients.end()) return "its record is gone";
  if (self->state == ClientState::Running) return "admitted";
  std::uint64_t held[kMaxClients] = {};
  bool stopped[kMaxClients] = {};
  for (const ClientSnapshot& client : node.clients)
    if (client.state == ClientState::Memory && client.querySlot < kMaxClients) {
      held[client.querySlot] += client.budgetHeld;
      stopped[client.querySlot] = stopped[client.querySlot] || processStopped(client.pid);
    }
  // What mqxd counts against the capacity (NodeDaemon::admitPostponed).
  const bool byPeak = admission == AdmissionKind::Peak;
  std::uint64_t runningDemand = 0;
  std::uint32_t runningCount = 0, earlier = 0;
  std::vector<std::pair<std::uint64_t, std::string>> holders;
  for (const ClientSnapshot& client : node.clients) {
    if (client.state == ClientState::Waiting && client.arrival < self->arrival) ++earlier;
    if (client.state == ClientState::Running) {
      const std::uint64_t demand = std::max(byPeak ? client.peakDemand : client.weightedDemand, held[client.slot]);
      runningDemand += demand;
      ++runningCount;
      const bool isStopped = stopped[client.slot] || processStopped(client.pid);
      holders.emplace_back(demand, fmt::format("'{}' (pid {}{}) demand {}, holds {}", client.name, client.pid,
                                               isStopped ? ", STOPPED: SIGCONT resumes it" : "", mib(demand),
                                               mib(held[client.slot])));
    } else if (client.state == ClientState::Memory && client.querySlot == kNoSlot && client.budgetHeld != 0) {
      holders.emplace_back(client.budgetHeld,
                           fmt::format("pid {} outside any query{} holds {}", client.pid,
                                       processStopped(client.pid) ? " (STOPPED: SIGCONT resumes it)" : "",
                                       mib(client.budgetHeld)));
    }
  }
  std::sort(holders.begin(), holders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string why;
  if (admission == AdmissionKind::Fix) {
    why = fmt::format("{} of at most {} queries run (admission fix)", runningCount, fixN);
  } else {
    const std::uint64_t need = byPeak ? self->peakDemand : self->weightedDemand;
    const std::uint64_t free = node.capacity > runningDemand ? node.capacity - runningDemand : 0;
    why = fmt::format("it needs {} ({} demand), {} of the node's {} are free", mib(need), byPeak ? "peak" : "weighted",
                      mib(free), mib(node.capacity));
    if (need <= free) why += " (it fits)";
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
