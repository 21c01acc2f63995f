// DeviceBudget: the device memory mqx may back. A process-private budget
// here; the multi-process mode puts one budget for the node in shared memory
// behind the same interface.
#pragma once

#include <atomic>
#include <cstddef>

namespace mqx {

class PeerRegions;

class DeviceBudget {
public:
  virtual ~DeviceBudget() = default;
  // Takes `bytes` of the budget if they are free.
  virtual bool tryAcquire(std::size_t bytes) = 0;
  virtual void release(std::size_t bytes) = 0;
  virtual std::size_t used() const = 0;
  virtual std::size_t limit() const = 0;
  // What other processes hold of this budget: 0 for a process's own. A
  // process alone on a shared device keeps a spare page (ResidencyManager),
  // one beside others does not: held idle, it is budget they need.
  virtual std::size_t heldElsewhere() const { return 0; }
  // Called when this process needs `bytes` and has nothing left to evict: a
  // budget shared with other processes asks them to evict (docs/architecture.md
  // decision 8). True when some bytes may have been freed (retry tryAcquire).
  virtual bool reclaimElsewhere(std::size_t bytes) { return false; }
  // The other processes' regions, for global victim selection; null when
  // the budget is this process's own.
  virtual PeerRegions* peers() { return nullptr; }
};

class LocalDeviceBudget final : public DeviceBudget {
public:
  explicit LocalDeviceBudget(std::size_t limit) : limit_(limit) {}
  bool tryAcquire(std::size_t bytes) override;
  void release(std::size_t bytes) override;
  std::size_t used() const override { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const override { return limit_; }

private:
  std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

} // namespace mqx
