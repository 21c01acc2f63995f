#include "core/swap_buffer.hpp"

#include <algorithm>
#include <cstdlib>

#include "common/log.hpp"

namespace mqx {
namespace {
constexpr std::size_t kChunkBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxSlotsPerChunk = 16;
} // namespace

SwapBuffer::SwapBuffer(device::DeviceBackend& backend, std::size_t limit, bool pinned)
    : backend_(backend), limit_(limit), pinned_(pinned) {}

SwapBuffer::~SwapBuffer() {
  for (const auto& chunk : chunks_) {
    if (chunk.pinned)
      backend_.freeHost(chunk.base, chunk.bytes);
    else
      std::free(chunk.base);
  }
}

bool SwapBuffer::grow(std::size_t slotBytes, bool overLimit) {
  // Several slots per chunk where the limit allows (pinning is paid per
  // chunk), one at least; at most 16, since every slot size has chunks of
  // its own and region-sized slots (no page coherence) come in many sizes.
  std::size_t room = limit_ > reserved_ ? limit_ - reserved_ : 0;
  std::size_t slots = std::clamp<std::size_t>(std::min(kChunkBytes, room) / slotBytes, 1, kMaxSlotsPerChunk);
  std::size_t bytes = slots * slotBytes;
  if (bytes > room && !overLimit) return false;
  void* memory = nullptr;
  bool chunkPinned = pinned_ && ok(backend_.allocateHost(bytes, &memory));
  if (!chunkPinned) {
    if (pinned_)
      log(LogLevel::Info,
          "swap buffer: pinned allocation of {} bytes failed, using pageable "
          "memory",
          bytes);
    memory = std::aligned_alloc(4096, bytes);
    if (memory == nullptr) return false;
  }
  auto* base = static_cast<std::byte*>(memory);
  chunks_.push_back({base, bytes, chunkPinned});
  reserved_ += bytes;
  auto& list = freeSlots_[slotBytes];
  for (std::size_t i = slots; i-- > 0;)
    list.push_back(base + i * slotBytes);
  return true;
}

std::byte* SwapBuffer::acquire(std::size_t bytes, bool overLimit) {
  bytes = roundUp(bytes, 4096);
  auto& list = freeSlots_[bytes];
  if (list.empty() && !grow(bytes, overLimit)) return nullptr;
  std::byte* slot = list.back();
  list.pop_back();
  used_ += bytes;
  return slot;
}

void SwapBuffer::release(std::byte* slot, std::size_t bytes) {
  bytes = roundUp(bytes, 4096);
  freeSlots_[bytes].push_back(slot);
  used_ -= bytes;
}

} // namespace mqx
