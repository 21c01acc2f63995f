#include "core/swap_slots.hpp"

#include <utility>

#include "common/log.hpp"

namespace mqx {

SwapSlot::SwapSlot(SwapSlot&& other) noexcept
    : buffer_(other.buffer_), slot_(std::exchange(other.slot_, nullptr)), bytes_(other.bytes_) {}

SwapSlot& SwapSlot::operator=(SwapSlot&& other) noexcept {
  if (this != &other) {
    reset();
    buffer_ = other.buffer_;
    slot_ = std::exchange(other.slot_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

std::byte* SwapSlot::commit() { return std::exchange(slot_, nullptr); }

void SwapSlot::reset() {
  if (slot_ != nullptr) buffer_->release(std::exchange(slot_, nullptr), bytes_);
}

SwapSlot SwapSlots::acquire(std::size_t bytes, bool overLimit, bool needBlock) {
  std::byte* slot = buffer_.acquire(bytes, false, needBlock);
  if (slot == nullptr && !quarantine_.empty()) {
    reclaim(true);
    slot = buffer_.acquire(bytes, false, needBlock);
  }
  if (slot == nullptr && overLimit) slot = buffer_.acquire(bytes, true, needBlock);
  return slot != nullptr ? SwapSlot(buffer_, slot, bytes) : SwapSlot();
}

SwapSlot SwapSlots::acquireFree(std::size_t bytes, bool needBlock) {
  std::byte* slot = buffer_.acquire(bytes, false, needBlock);
  return slot != nullptr ? SwapSlot(buffer_, slot, bytes) : SwapSlot();
}

void SwapSlots::quarantine(std::byte* slot, std::size_t bytes) {
  const StreamHandle toDevice = backend_.transferStream(device::TransferDirection::ToDevice);
  device::Fence fence;
  if (!loadsInFlight_ || !ok(backend_.enqueueFence(toDevice, &fence))) {
    if (loadsInFlight_)
      if (Status waited = backend_.synchronize(toDevice); !ok(waited)) {
        // A load may still read the slot: it is kept (lost), never reused.
        log(LogLevel::Error, "waiting for loads before a slot is reused: {}; the slot is not reused", toString(waited));
        return;
      }
    buffer_.release(slot, bytes);
    return;
  }
  quarantine_.push_back({fence, slot, bytes});
}

void SwapSlots::reclaim(bool wait) {
  std::erase_if(quarantine_, [&](const QuarantinedSlot& entry) {
    if (wait)
      if (Status waited = backend_.waitFence(entry.fence); !ok(waited))
        log(LogLevel::Error, "waiting for a quarantined slot's loads: {}", toString(waited)); // it stays quarantined
    if (!backend_.fenceReached(entry.fence)) return false;
    buffer_.release(entry.slot, entry.bytes);
    return true;
  });
  if (quarantine_.empty() && wait) loadsInFlight_ = false;
}

} // namespace mqx
