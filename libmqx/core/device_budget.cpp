#include "core/device_budget.hpp"

namespace mqx {

bool LocalDeviceBudget::tryAcquire(std::size_t bytes) {
  std::size_t current = used_.load(std::memory_order_relaxed);
  do {
    if (current + bytes > limit_) return false;
  } while (!used_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

void LocalDeviceBudget::release(std::size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

} // namespace mqx
