// FenceTable: completion of stream work observed without a host callback in
// the GPU's queue (docs/architecture.md decision 7). Each stream mqx fences gets a
// slot: a 64-bit word of pinned host memory mapped for the device and a
// sequence counter. A fence is cuStreamWriteValue64 of the next sequence
// number into the slot's word; it is reached when the host reads a value at
// least as large. Sequence numbers only grow, so one read answers for every
// earlier fence of the slot.
//
// Coalescing (off unless coalesceMicroseconds > 0): a fence enqueued less
// than that long after the slot's last write is only numbered; its write is
// owed and made by a later fence of the slot, or when someone waits for it
// (until then it reads as not reached). One write then covers many launches (a write costs about as
// much as a launch), at the price of learning completion later. The
// per-thread default stream is never coalesced: its handle means another
// stream on another thread, so the write cannot be made later elsewhere.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/status.hpp"
#include "common/types.hpp"
#include "device/cuda/driver_api.hpp"
#include "device/cuda/driver_handles.hpp"
#include "device/device_backend.hpp"

namespace mqx::device::cuda {

class FenceTable {
public:
  FenceTable(const DriverApi& api, unsigned coalesceMicroseconds);
  FenceTable(const FenceTable&) = delete;
  FenceTable& operator=(const FenceTable&) = delete;

  Status enqueue(StreamHandle stream, Fence* fence);
  // Every fence of `stream` is written where it is enqueued, never owed. For
  // mqx's own transfer streams: eviction waits for each page's write-back
  // fence to unmap that page while later write-backs still run.
  Status writeEveryFence(StreamHandle stream);
  bool reached(const Fence& fence);
  // The application is about to destroy `stream`: a write owed on it is made
  // now, and later waits on its fences only read their word (the handle may
  // be gone, or name another stream). A stream created later with the same
  // handle takes the slot back.
  void retire(StreamHandle stream);
  // Makes an owed write, then polls (spinning briefly, then sleeping) until
  // the fence is reached. Fails instead of hanging when the stream reports an
  // error or drained without writing the value.
  Status wait(const Fence& fence);

private:
  static constexpr std::size_t kSlotsPerBlock = 512;
  struct Block {
    PinnedHostMemory memory; // kSlotsPerBlock words, mapped for the device
    CUdeviceptr devicePointer = 0;
  };
  struct Slot {
    std::uint64_t next = 0;    // last sequence number handed out
    std::uint64_t written = 0; // last sequence number enqueued for writing
    CUstream stream = nullptr;
    bool perThread = false;
    bool exact = false;   // never coalesced (writeEveryFence)
    bool retired = false; // the application destroyed the stream (retire)
    std::chrono::steady_clock::time_point lastWrite{};
  };

  // Under mutex_: the slot of a stream, created on first use.
  Status slotFor(CUstream stream, std::uint32_t* slot);
  Status addBlock();
  // Under mutex_: enqueues the write of the slot's newest number.
  Status write(std::uint32_t slot);
  bool seen(const Fence& fence) const;
  volatile std::uint64_t* word(std::uint32_t slot) const;
  CUdeviceptr deviceWord(std::uint32_t slot) const;

  const DriverApi& api_;
  const std::chrono::microseconds coalesce_;
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  std::vector<Slot> slots_;
  std::unordered_map<CUstream, std::uint32_t> byStream_;
  std::unordered_map<unsigned long long, std::uint32_t> byStreamId_; // per-thread default streams
};

} // namespace mqx::device::cuda
