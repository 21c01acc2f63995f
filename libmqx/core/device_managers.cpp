#include "core/device_managers.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace mqx {
void DeviceManagers::add(int ordinal, MemoryManager* manager) {
  if (ordinal < 0 || ordinal >= kMaxDevices || manager == nullptr)
    throw std::invalid_argument("DeviceManagers::add: no such device ordinal");
  MemoryManager* expected = nullptr;
  if (!slots_[ordinal].compare_exchange_strong(expected, manager, std::memory_order_acq_rel))
    throw std::logic_error("DeviceManagers::add: the device has a manager already");
  expected = nullptr;
  first_.compare_exchange_strong(expected, manager, std::memory_order_acq_rel);
  count_.fetch_add(1, std::memory_order_acq_rel);
}

int DeviceManagers::ordinalOf(const MemoryManager* manager) const noexcept {
  for (int ordinal = 0; ordinal < kMaxDevices; ++ordinal)
    if (manager != nullptr && on(ordinal) == manager) return ordinal;
  return -1;
}

MemoryManager* DeviceManagers::owner(DevicePtr address) const {
  if (MemoryManager* manager = only()) return manager->isManaged(address) ? manager : nullptr;
  for (int ordinal = 0; ordinal < kMaxDevices; ++ordinal)
    if (MemoryManager* manager = on(ordinal); manager != nullptr && manager->isManaged(address)) return manager;
  return nullptr;
}

// The bounce buffer is large enough that the per-chunk calls cost little
// against the bytes, small enough not to hold much host memory for the copy.
Status DeviceManagers::copyBetween(MemoryManager& to, DevicePtr destination, MemoryManager& from, DevicePtr source,
                                   std::size_t bytes, std::size_t bounceBytes) {
  if (bytes == 0) return Status::Success;
  const std::size_t chunk = std::min(bytes, std::max<std::size_t>(bounceBytes, 1));
  // Whole pages of its own: write protection is per host page, and a bounce
  // buffer sharing a page with a lazy copy's source (protected by the first
  // device's manager) would fault when `from` writes it.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bounceSize = (chunk + page - 1) / page * page;
  std::unique_ptr<std::byte, decltype(&std::free)> bounce(static_cast<std::byte*>(std::aligned_alloc(page, bounceSize)),
                                                          &std::free);
  if (bounce == nullptr) return Status::OutOfMemory;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t now = std::min(chunk, bytes - done);
    MQX_TRY(from.copyDeviceToHost(bounce.get(), source + done, now, StreamHandle{}, true));
    MQX_TRY(to.copyHostToDevice(destination + done, bounce.get(), now, StreamHandle{}, true));
    // The write may have been recorded lazily, with the bounce buffer as its
    // source: its bytes are saved before the buffer is reused or freed.
    to.prepareHostWrite(bounce.get(), now);
    done += now;
  }
  return Status::Success;
}

} // namespace mqx
