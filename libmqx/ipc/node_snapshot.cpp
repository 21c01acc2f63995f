#include "ipc/node_snapshot.hpp"

#include <cstring>

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

} // namespace mqx::ipc
