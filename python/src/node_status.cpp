#include "node_status.hpp"

#include <unistd.h>

#include <thread>

#include "errors.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::python {

std::string toString(ipc::ClientState state) {
  switch (state) {
  case ipc::ClientState::Free: return "free";
  case ipc::ClientState::Waiting: return "waiting";
  case ipc::ClientState::Running: return "running";
  case ipc::ClientState::Memory: return "memory";
  }
  return "unknown";
}

TimedNodeLock::TimedNodeLock(ipc::NodeState& node, std::chrono::milliseconds timeout) : node_(node) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!node.lock.tryLock()) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw MqxError("mqx: the node's lock has been held by another live process for more than " +
                     std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

NodeStatus snapshot(const ipc::NodeState& node) {
  NodeStatus status;
  status.daemonPid = node.daemonPid;
  status.capacity = node.capacity;
  status.used = node.usedBytes();
  status.reclaimedBytes = node.reclaimedBytes;
  status.deadClients = node.deadClients;
  status.evictionRequestsServed = node.evictionRequestsServed;
  status.bytesEvictedForOthers = node.bytesEvictedForOthers;
  for (std::uint32_t slot = 0; slot < ipc::kMaxClients; ++slot) {
    const ipc::ClientRecord& record = node.clients[slot];
    if (record.state == ipc::ClientState::Free) continue;
    ClientStatus client;
    client.slot = slot;
    client.state = toString(record.state);
    client.pid = record.pid;
    client.name = std::string(record.name, strnlen(record.name, sizeof record.name));
    client.arrival = record.arrival;
    client.weightedDemand = record.weightedDemand;
    client.peakDemand = record.peakDemand;
    client.budgetHeld = record.budgetHeld;
    client.observedPeak = record.observedPeak;
    client.querySlot = record.querySlot == ipc::kNoSlot ? -1 : static_cast<std::int64_t>(record.querySlot);
    status.clients.push_back(std::move(client));
  }
  return status;
}

NodeStatus readNodeStatus(const std::string& instance) {
  const auto names = ipc::IpcNames::forInstance(instance, getuid());
  const auto where = instance.empty() ? std::string("this user") : "this user and instance '" + instance + "'";
  auto segment = ipc::SharedSegment::open(names);
  if (segment == nullptr)
    throw DaemonNotRunning("mqx: no mqxd is running for " + where + " (no segment " + names.segment + ")");
  ipc::NodeState& node = segment->state();
  NodeStatus status;
  {
    TimedNodeLock lock(node, std::chrono::milliseconds(2000));
    status = snapshot(node);
  }
  if (!ipc::processAlive(status.daemonPid))
    throw DaemonNotRunning("mqx: the mqxd of " + where + " (pid " + std::to_string(status.daemonPid) +
                           ") is gone; its segment " + names.segment + " is stale");
  status.instance = instance;
  status.segment = names.segment;
  return status;
}

} // namespace mqx::python
