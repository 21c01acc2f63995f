#include "core/swap_buffer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/log.hpp"

namespace mqx {
namespace {
constexpr std::size_t kChunkBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxSlotsPerChunk = 16;
} // namespace

std::size_t SwapBuffer::limitFor(std::size_t configured) {
  if (configured != 0) return configured;
  // memory.swap_buffer_limit = 0: half of the host's physical memory. A fixed
  // 16 GiB made a job of 2x the device fail with out-of-memory on a host with
  // 128 GiB (bench/peers); the chunks are taken as evictions need them, so a
  // large limit costs nothing until it is used, and half leaves the rest to
  // the program and the other processes.
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long pageBytes = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageBytes <= 0) return std::size_t{16} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(pageBytes) / 2;
}

SwapBuffer::SwapBuffer(device::DeviceBackend& backend, std::size_t limit, bool pinned, HostBlockSource* lender)
    : backend_(backend), lender_(lender), limit_(limitFor(limit)), pinned_(pinned) {
  // Whether the backend maps host blocks: one block of the smallest size
  // tells, and stays as the first chunk.
  if (pinned_) mapsPages_ = growBlocks(backend_.granularity(), 1);
}

SwapBuffer::~SwapBuffer() {
  for (const auto& chunk : chunks_) {
    if (chunk.lent)
      lender_->giveBack(chunk.blocks);
    else if (!chunk.blocks.empty())
      backend_.destroyHostBlocks(chunk.blocks);
    else if (chunk.pinned)
      backend_.freeHost(chunk.base, chunk.bytes);
    else
      std::free(chunk.base);
  }
}

bool SwapBuffer::growBlocks(std::size_t slotBytes, std::size_t slots) {
  // Lent blocks first (no pinning on this path), then created ones.
  std::vector<device::HostBlock> blocks;
  bool lent = false;
  if (lender_ != nullptr && mapsPages_) {
    blocks = lender_->take(slotBytes, slots);
    lent = !blocks.empty();
  }
  if (!lent && !ok(backend_.createHostBlocks(slotBytes, slots, &blocks))) return false;
  auto& list = freeSlots_[slotBytes];
  for (std::size_t i = blocks.size(); i-- > 0;) {
    list.push_back(blocks[i].host);
    blocks_[blocks[i].host] = blocks[i];
  }
  const std::size_t bytes = slotBytes * blocks.size();
  reserved_ += bytes;
  if (lent) lent_ += bytes;
  chunks_.push_back({blocks.front().host, bytes, true, std::move(blocks), lent});
  return true;
}

const device::HostBlock* SwapBuffer::blockOf(const std::byte* slot) const {
  auto it = blocks_.find(slot);
  return it == blocks_.end() ? nullptr : &it->second;
}

bool SwapBuffer::grow(std::size_t slotBytes, bool overLimit, bool pageable) {
  // Several slots per chunk where the limit allows (pinning is paid per
  // chunk), one at least; at most 16, since every slot size has chunks of
  // its own and region-sized slots (no page coherence) come in many sizes.
  std::size_t room = limit_ > reserved_ ? limit_ - reserved_ : 0;
  std::size_t slots = std::clamp<std::size_t>(std::min(kChunkBytes, room) / slotBytes, 1, kMaxSlotsPerChunk);
  std::size_t bytes = slots * slotBytes;
  if (bytes > room && !overLimit) return false;
  if (mapsPages_ && !pageable) return growBlocks(slotBytes, slots);
  void* memory = nullptr;
  bool chunkPinned = pinned_ && !mapsPages_ && ok(backend_.allocateHost(bytes, &memory));
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
  chunks_.push_back({base, bytes, chunkPinned, {}, false});
  reserved_ += bytes;
  auto& list = (pageable ? freePageable_ : freeSlots_)[slotBytes];
  for (std::size_t i = slots; i-- > 0;)
    list.push_back(base + i * slotBytes);
  return true;
}

std::byte* SwapBuffer::acquire(std::size_t bytes, bool overLimit, bool needBlock) {
  bytes = roundUp(bytes, mapsPages_ ? backend_.granularity() : 4096);
  auto& list = freeSlots_[bytes];
  std::vector<std::byte*>* from = &list;
  if (list.empty() && !grow(bytes, overLimit, false)) {
    // No host block: an image needs no mapping, pageable memory holds it.
    if (!mapsPages_ || needBlock) return nullptr;
    from = &freePageable_[bytes];
    if (from->empty() && !grow(bytes, overLimit, true)) return nullptr;
  }
  std::byte* slot = from->back();
  from->pop_back();
  used_ += bytes;
  return slot;
}

void SwapBuffer::release(std::byte* slot, std::size_t bytes) {
  bytes = roundUp(bytes, mapsPages_ ? backend_.granularity() : 4096);
  (mapsPages_ && blockOf(slot) == nullptr ? freePageable_ : freeSlots_)[bytes].push_back(slot);
  used_ -= bytes;
}

} // namespace mqx
