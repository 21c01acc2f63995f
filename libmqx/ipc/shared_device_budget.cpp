#include "ipc/shared_device_budget.hpp"

#include <unistd.h>

#include <algorithm>

#include "ipc/daemon_client.hpp"

namespace mqx::ipc {
namespace {

// This process's record, or null once it left the node (or in a forked child,
// which inherits the parent's client but not its right to the record).
ClientRecord* ownRecord(DaemonClient& client) {
  if (client.slot() == kNoSlot) return nullptr;
  ClientRecord& record = client.node().clients[client.slot()];
  return record.pid == getpid() && record.state == ClientState::Memory ? &record : nullptr;
}

} // namespace

bool SharedDeviceBudget::tryAcquire(std::size_t bytes) {
  NodeState& node = client_->node();
  RobustLock lock(node.lock);
  ClientRecord* record = ownRecord(*client_);
  if (record == nullptr || node.usedBytes() + bytes > node.capacity) return false;
  record->budgetHeld += bytes; // one store: nothing to repair if killed here
  return true;
}

void SharedDeviceBudget::release(std::size_t bytes) {
  NodeState& node = client_->node();
  RobustLock lock(node.lock);
  if (ClientRecord* record = ownRecord(*client_))
    record->budgetHeld -= std::min<std::uint64_t>(bytes, record->budgetHeld);
}

std::size_t SharedDeviceBudget::used() const {
  NodeState& node = client_->node();
  RobustLock lock(node.lock);
  return node.usedBytes();
}

std::size_t SharedDeviceBudget::limit() const { return client_->node().capacity; }

std::size_t SharedDeviceBudget::held() const {
  NodeState& node = client_->node();
  RobustLock lock(node.lock);
  ClientRecord* record = ownRecord(*client_);
  return record != nullptr ? record->budgetHeld : 0;
}

bool SharedDeviceBudget::reclaimElsewhere(std::size_t bytes) { return client_->requestEviction(bytes); }

} // namespace mqx::ipc
