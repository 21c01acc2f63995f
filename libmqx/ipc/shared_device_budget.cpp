#include "ipc/shared_device_budget.hpp"

#include <algorithm>

#include "ipc/daemon_client.hpp"

namespace mqx::ipc {

bool SharedDeviceBudget::tryAcquire(std::size_t bytes) {
  NodeState& node = client_->node();
  RobustLock lock(node.lock);
  if (node.usedBytes() + bytes > node.capacity) return false;
  node.clients[client_->slot()].budgetHeld += bytes; // one store: nothing to repair if killed here
  return true;
}

void SharedDeviceBudget::release(std::size_t bytes) {
  NodeState& node = client_->node();
  RobustLock lock(node.lock);
  ClientRecord& record = node.clients[client_->slot()];
  record.budgetHeld -= std::min<std::uint64_t>(bytes, record.budgetHeld);
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
  return node.clients[client_->slot()].budgetHeld;
}

bool SharedDeviceBudget::reclaimElsewhere(std::size_t bytes) { return client_->requestEviction(bytes); }

} // namespace mqx::ipc
