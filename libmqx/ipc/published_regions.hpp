// PublishedRegions: the region directory of one memory client in the node's
// segment: each of its resident regions with what the replacement policy
// needs (paper §4.2: size, dirty bytes, last use on the node-wide logical
// clock, use count), so that a process that must evict chooses its victim
// among every process's regions (paper §6, global victim selection).
//
// The owner writes on its launch path, so no lock: each entry is a seqlock
// (one writer, the owner under its manager's lock; readers retry while the
// sequence is odd or changed). Readers tolerate staleness: the owner checks
// the region again when asked to evict it.
#pragma once

#include <atomic>
#include <cstdint>

namespace mqx::ipc {

inline constexpr std::uint32_t kPublishedRegionsPerClient = 128;

struct RegionSummary {
  std::uint64_t region = 0; // the owner's RegionId; 0: the entry is empty
  std::uint64_t residentBytes = 0;
  std::uint64_t dirtyBytes = 0;
  std::uint64_t lastUse = 0; // NodeState::logicalClock
  std::uint64_t useCount = 0;
};

class PublishedRegion {
public:
  // The owner only.
  void write(const RegionSummary& summary);
  // False when the owner was writing (try again) or the entry is empty.
  bool read(RegionSummary* summary) const;

private:
  std::atomic<std::uint64_t> sequence_{0}; // odd while the owner writes
  std::atomic<std::uint64_t> region_{0};
  std::atomic<std::uint64_t> residentBytes_{0};
  std::atomic<std::uint64_t> dirtyBytes_{0};
  std::atomic<std::uint64_t> lastUse_{0};
  std::atomic<std::uint64_t> useCount_{0};
};

struct PublishedRegions {
  PublishedRegion entries[kPublishedRegionsPerClient];
  // The owner, when it claims its client record: a dead predecessor's
  // entries go.
  void clear();
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "seqlock entries live in shared memory");

inline void PublishedRegion::write(const RegionSummary& summary) {
  const std::uint64_t start = sequence_.load(std::memory_order_relaxed);
  sequence_.store(start + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  region_.store(summary.region, std::memory_order_relaxed);
  residentBytes_.store(summary.residentBytes, std::memory_order_relaxed);
  dirtyBytes_.store(summary.dirtyBytes, std::memory_order_relaxed);
  lastUse_.store(summary.lastUse, std::memory_order_relaxed);
  useCount_.store(summary.useCount, std::memory_order_relaxed);
  sequence_.store(start + 2, std::memory_order_release);
}

inline bool PublishedRegion::read(RegionSummary* summary) const {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const std::uint64_t before = sequence_.load(std::memory_order_acquire);
    if (before % 2 != 0) continue;
    RegionSummary copy;
    copy.region = region_.load(std::memory_order_relaxed);
    copy.residentBytes = residentBytes_.load(std::memory_order_relaxed);
    copy.dirtyBytes = dirtyBytes_.load(std::memory_order_relaxed);
    copy.lastUse = lastUse_.load(std::memory_order_relaxed);
    copy.useCount = useCount_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (sequence_.load(std::memory_order_relaxed) != before) continue;
    *summary = copy;
    return copy.region != 0;
  }
  return false; // the owner is busy with it: skipping it is only stale
}

inline void PublishedRegions::clear() {
  for (auto& entry : entries)
    entry.write({});
}

} // namespace mqx::ipc
