// CowTracker: the application buffers that are sources of pending lazy copies
// (docs/architecture.md decision 5, paper §4.1 and §6). Their host pages are
// write-protected with mprotect; a write fault or a release of the buffer
// tells the manager to save the pending data first. Bookkeeping only: the
// signal handler and the free/munmap hooks live in hook/host_memory_hooks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/region.hpp"

namespace mqx {

struct CowRecord {
  std::uintptr_t start = 0; // first byte of the source range
  std::size_t bytes = 0;
  PageKey owner; // the page whose host image is this range
};

class CowTracker {
public:
  ~CowTracker();

  // Write-protects the host pages under [source, source + bytes) and records
  // that `owner` reads them. False if the range cannot be protected (then the
  // caller copies the data instead).
  bool protect(const void* source, std::size_t bytes, PageKey owner);
  // Drops the record of `owner` for the range starting at `source`; host
  // pages no longer referenced get their original protection back.
  void unprotect(const void* source, std::size_t bytes, PageKey owner);

  // Host pages no record needs any more stay write-protected ("lingering")
  // until they are written, released or protected again: an application
  // that copies the same buffer again and again then pays no mprotect at
  // all. These undo that for a fault at `address` (true if it was one) and
  // for a range that someone other than the application is about to write
  // or release.
  bool releaseLingering(std::uintptr_t address);
  void releaseLingering(std::uintptr_t address, std::size_t bytes);

  // Records whose range overlaps [address, address + bytes).
  std::vector<CowRecord> overlapping(std::uintptr_t address, std::size_t bytes) const;
  // Records on the host page that contains `address`.
  std::vector<CowRecord> onHostPage(std::uintptr_t address) const;

  bool empty() const { return records_.empty(); }
  // Readable without the manager's lock: lets free() skip all work while
  // nothing is protected.
  bool anyProtected() const { return protectedCount_.load(std::memory_order_acquire) != 0; }
  // Whether any host page under [address, address + bytes) is protected.
  // Safe without the manager's lock: free() on any thread asks it, and must
  // not wait for the manager unless the memory is really ours.
  bool overlapsProtected(std::uintptr_t address, std::size_t bytes) const;

private:
  // A run of host pages with the same reference count: protection is
  // changed per run, in one mprotect call, never per 4 KiB page.
  struct Segment {
    std::uintptr_t end = 0;
    std::uint32_t references = 0;
    int originalProtection = 0;
    bool writeProtected = false; // false when the memory was not writable anyway
  };
  static std::uintptr_t hostPageSize();
  // Makes `at` a segment boundary.
  void split(std::uintptr_t at);
  // Adds references to [first, last); false (and nothing changed) when part of it is not mapped.
  bool reference(std::uintptr_t first, std::uintptr_t last);
  void dereference(std::uintptr_t first, std::uintptr_t last);
  void restore(std::map<std::uintptr_t, Segment>::iterator segment);

  std::multimap<std::uintptr_t, CowRecord> records_; // by start
  std::size_t longestRecord_ = 0;
  std::map<std::uintptr_t, Segment> segments_; // disjoint, by first page
  std::atomic<std::size_t> protectedCount_{0};
  mutable std::mutex mutex_; // guards the maps against overlapsProtected()
};

} // namespace mqx
