// SharedDeviceBudget: the node's device budget in shared memory, behind the
// DeviceBudget interface that MemoryManager uses (ARCHITECTURE.md decision
// 9). Each process's bytes are counted in its own client record, so the
// daemon gives a dead process's bytes back by freeing its record; the node's
// use is the sum of the records.
#pragma once

#include <memory>

#include "core/device_budget.hpp"

namespace mqx::ipc {

class DaemonClient;

class SharedDeviceBudget final : public DeviceBudget {
public:
  explicit SharedDeviceBudget(std::shared_ptr<DaemonClient> client) : client_(std::move(client)) {}
  bool tryAcquire(std::size_t bytes) override;
  void release(std::size_t bytes) override;
  std::size_t used() const override;
  std::size_t limit() const override;
  // Cross-process eviction: asks the other processes to evict (paper §6,
  // evicting another query's regions when this one cannot proceed).
  bool reclaimElsewhere(std::size_t bytes) override;
  // Bytes this process holds.
  std::size_t held() const;

private:
  std::shared_ptr<DaemonClient> client_;
};

} // namespace mqx::ipc
