// SwapSlots: the swap buffer's slots as the core takes and gives them back
// (docs/architecture.md decision 4). A slot is taken as a SwapSlot, which
// gives it back when it goes out of scope unless a page took it (commit):
// a transition that fails half-way, or a path that returns early, cannot
// keep a slot nobody holds. A slot a page let go of while loads issued
// before may still read it waits for them (quarantine) before anyone else
// may take it.
#pragma once

#include <cstddef>
#include <vector>

#include "core/swap_buffer.hpp"
#include "device/device_backend.hpp"

namespace mqx {

// One slot of the swap buffer, held until a page takes it (commit) or it
// goes out of scope (given back). Empty when none could be had.
class [[nodiscard]] SwapSlot {
public:
  SwapSlot() = default;
  SwapSlot(SwapSlot&& other) noexcept;
  SwapSlot& operator=(SwapSlot&& other) noexcept;
  SwapSlot(const SwapSlot&) = delete;
  SwapSlot& operator=(const SwapSlot&) = delete;
  ~SwapSlot() { reset(); }

  std::byte* get() const { return slot_; }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return slot_ != nullptr; }

  // A page holds the slot now (its swap image or its host block): whoever
  // makes the page let go of it gives it back (PageMapper). Returns it.
  std::byte* commit();
  // A copy may still write the slot and cannot be waited for: it is never
  // given back (lost) rather than reused.
  void abandon() { commit(); }
  // Gives the slot back now.
  void reset();

private:
  friend class SwapSlots;
  SwapSlot(SwapBuffer& buffer, std::byte* slot, std::size_t bytes) : buffer_(&buffer), slot_(slot), bytes_(bytes) {}

  SwapBuffer* buffer_ = nullptr;
  std::byte* slot_ = nullptr;
  std::size_t bytes_ = 0;
};

class SwapSlots {
public:
  SwapSlots(device::DeviceBackend& backend, SwapBuffer& buffer) : backend_(backend), buffer_(buffer) {}

  // A slot of `bytes` (a page's mapped bytes), reclaiming quarantined slots
  // if the buffer is full, which waits for their loads; empty when there is
  // none. `overLimit`: past the buffer's limit rather than fail. `needBlock`:
  // a host block, which a page can map (SwapBuffer::acquire).
  SwapSlot acquire(std::size_t bytes, bool overLimit = false, bool needBlock = false);
  // A slot that is free now, without waiting for anything; empty otherwise.
  SwapSlot acquireFree(std::size_t bytes, bool needBlock);
  // Gives back a slot that a page held and no in-flight work reads.
  void release(std::byte* slot, std::size_t bytes) { buffer_.release(slot, bytes); }
  // Gives back a slot that a page let go of, which loads issued so far may
  // still read: it is reused only once the host-to-device stream passes them.
  void quarantine(std::byte* slot, std::size_t bytes);
  // Loads that read swap slots were issued (LoadSources::swapSlots).
  void loadsRead() { loadsInFlight_ = true; }
  // Gives back the quarantined slots whose loads are done; `wait`: waits for
  // the loads of all of them.
  void reclaim(bool wait);

  bool mapsPages() const { return buffer_.mapsPages(); }
  bool pinned() const { return buffer_.pinned(); }
  const device::HostBlock* blockOf(const std::byte* slot) const { return buffer_.blockOf(slot); }
  std::size_t usedBytes() const { return buffer_.usedBytes(); }
  std::size_t limit() const { return buffer_.limit(); }

private:
  struct QuarantinedSlot {
    device::Fence fence; // loads enqueued before it may still read the slot
    std::byte* slot;
    std::size_t bytes;
  };

  device::DeviceBackend& backend_;
  SwapBuffer& buffer_;
  std::vector<QuarantinedSlot> quarantine_;
  bool loadsInFlight_ = false; // loads that read slots may still run
};

} // namespace mqx
