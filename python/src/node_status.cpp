#include "node_status.hpp"

#include <unistd.h>

#include <thread>

#include "errors.hpp"
#include "ipc/ipc_names.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::python {

TimedNodeLock::TimedNodeLock(ipc::NodeState& node, std::chrono::milliseconds timeout) : node_(node) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!node.lock.tryLock()) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw MqxError("mqx: the node's lock has been held by another live process for more than " +
                     std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

NodeStatus readNodeStatus(const std::string& instance) {
  const auto names = ipc::IpcNames::forInstance(instance, getuid());
  const auto where = instance.empty() ? std::string("this user") : "this user and instance '" + instance + "'";
  std::string problem;
  bool notOurs = false;
  auto segment = ipc::SharedSegment::open(names, &problem, nullptr, &notOurs);
  // Another user's object at the node's name is not this user's node.
  if (segment == nullptr && notOurs) throw MqxError("mqx: " + problem);
  if (segment == nullptr)
    throw DaemonNotRunning("mqx: no mqxd is running for " + where + " (no segment " + names.segment + ")");
  ipc::NodeState& node = segment->state();
  NodeStatus status;
  {
    TimedNodeLock lock(node, std::chrono::milliseconds(2000));
    status.node = ipc::snapshotOf(node);
  }
  if (!ipc::processAlive(status.node.daemonPid))
    throw DaemonNotRunning("mqx: the mqxd of " + where + " (pid " + std::to_string(status.node.daemonPid) +
                           ") is gone; its segment " + names.segment + " is stale");
  status.instance = instance;
  status.segment = names.segment;
  return status;
}

} // namespace mqx::python
