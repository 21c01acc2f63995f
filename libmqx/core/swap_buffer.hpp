// SwapBuffer: host memory for evicted and lazily copied pages (docs/
// architecture.md, decision 4). Slots come from large pinned chunks, so that
// write-backs and loads run at the pinned DMA rate and pinning costs are paid
// once per chunk. Where the backend can map host memory under device ranges
// (pinned swap, DeviceBackend::createHostBlocks), every slot is a host block:
// a page that is not resident maps its slot, so that it stays mapped
// ("every page always mapped").
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "core/host_block_source.hpp"
#include "device/device_backend.hpp"

namespace mqx {

class SwapBuffer {
public:
  // `limit` 0: half of the host's physical memory (limitFor). `lender`
  // (may be null) gives host blocks before any are created; they count
  // against the limit as created ones do.
  SwapBuffer(device::DeviceBackend& backend, std::size_t limit, bool pinned, HostBlockSource* lender = nullptr);
  static std::size_t limitFor(std::size_t configured);
  ~SwapBuffer();
  SwapBuffer(const SwapBuffer&) = delete;
  SwapBuffer& operator=(const SwapBuffer&) = delete;

  // A slot of `bytes`, or null when the limit is reached. `overLimit` allows
  // going past the limit: used where failing would lose application data
  // (a copy-on-write fault must succeed).
  // `needBlock`: the slot will be mapped under a page, so it must be a host
  // block. Otherwise, where blocks cannot be had (pinning refused), a
  // pageable slot serves: it holds an image, never a mapping.
  std::byte* acquire(std::size_t bytes, bool overLimit = false, bool needBlock = false);
  void release(std::byte* slot, std::size_t bytes);

  bool pinned() const { return pinned_; }
  // Whether slots are host blocks that pages map (decided by the first
  // chunk: the backend either can or cannot).
  bool mapsPages() const { return mapsPages_; }
  // The host block of a slot (mapsPages()); null for any other pointer.
  const device::HostBlock* blockOf(const std::byte* slot) const;
  std::size_t limit() const { return limit_; }
  std::size_t reservedBytes() const { return reserved_; } // held from the system
  std::size_t lentBytes() const { return lent_; }         // of them, lent by the node's pool
  std::size_t usedBytes() const { return used_; }         // handed out as slots

private:
  struct Chunk {
    std::byte* base;
    std::size_t bytes;
    bool pinned;
    std::vector<device::HostBlock> blocks; // host blocks: the chunk's slots
    bool lent = false;                     // the blocks are the lender's: given back, not destroyed
  };
  bool growBlocks(std::size_t slotBytes, std::size_t slots);
  bool grow(std::size_t slotBytes, bool overLimit, bool pageable);

  device::DeviceBackend& backend_;
  HostBlockSource* lender_;
  std::size_t limit_;
  bool pinned_;
  bool mapsPages_ = false;
  std::map<const std::byte*, device::HostBlock> blocks_; // by slot
  std::size_t reserved_ = 0;
  std::size_t lent_ = 0;
  std::size_t used_ = 0;
  std::vector<Chunk> chunks_;
  std::map<std::size_t, std::vector<std::byte*>> freeSlots_;    // by slot size
  std::map<std::size_t, std::vector<std::byte*>> freePageable_; // mapsPages_: slots that are not blocks
};

} // namespace mqx
