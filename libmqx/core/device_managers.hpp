// DeviceManagers: the memory managers of one process, one per device it
// manages (docs/interposer.md, "Several devices"). Each manager owns its
// device's pages, swap accounting, DMA streams and fences; this set only
// says which manager owns an address and copies between two of them.
//
// A manager is added once and stays until the process ends (the hook layer's
// Runtime owns them; a test owns its own), so readers need no lock: the
// slots are atomic and only ever go from null to a manager.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

#include "common/status.hpp"
#include "common/types.hpp"
#include "core/memory_manager.hpp"

namespace mqx {

class DeviceManagers {
public:
  // Device ordinals 0..kMaxDevices-1 (CUDA's CUdevice numbering in the
  // process, after CUDA_VISIBLE_DEVICES).
  static constexpr int kMaxDevices = 32;

  // Adds `manager` for device `ordinal` (not yet added). The first one added
  // is the process's copy-on-write manager (first()).
  void add(int ordinal, MemoryManager* manager);

  MemoryManager* on(int ordinal) const noexcept {
    return ordinal >= 0 && ordinal < kMaxDevices ? slots_[ordinal].load(std::memory_order_acquire) : nullptr;
  }
  // The first manager added: the only one that write-protects host memory
  // for lazy copies (two managers protecting one host page could each lift
  // the other's protection), so host writes by anyone but the application
  // are announced to it alone.
  MemoryManager* first() const noexcept { return first_.load(std::memory_order_acquire); }
  int count() const noexcept { return count_.load(std::memory_order_acquire); }
  // The one manager when exactly one device is managed, else null.
  MemoryManager* only() const noexcept { return count() == 1 ? first() : nullptr; }
  // The device ordinal of `manager`, or -1.
  int ordinalOf(const MemoryManager* manager) const noexcept;

  // The manager whose region holds `address`, or null.
  MemoryManager* owner(DevicePtr address) const;

  template <typename Visit> void forEach(Visit&& visit) const {
    for (int ordinal = 0; ordinal < kMaxDevices; ++ordinal)
      if (MemoryManager* manager = on(ordinal)) visit(ordinal, *manager);
  }

  // Copies `bytes` from `source` (a region of `from`) to `destination` (a
  // region of `to`), two managers of different devices. Each side keeps its
  // own coherence: the bytes leave `from` as a device-to-host read and enter
  // `to` as a host-to-device write, through a bounce buffer, chunk by chunk,
  // each on the manager's own default stream. Synchronous: on return the
  // copy is complete; the caller orders it after the application's stream.
  // `bounceBytes`: the bounce buffer's size (tests make it small to cross
  // chunk boundaries).
  static constexpr std::size_t kBounceBytes = 32 * 1024 * 1024;
  static Status copyBetween(MemoryManager& to, DevicePtr destination, MemoryManager& from, DevicePtr source,
                            std::size_t bytes, std::size_t bounceBytes = kBounceBytes);

private:
  std::array<std::atomic<MemoryManager*>, kMaxDevices> slots_{};
  std::atomic<MemoryManager*> first_{nullptr};
  std::atomic<int> count_{0};
};

} // namespace mqx
