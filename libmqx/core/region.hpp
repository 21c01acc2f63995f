// Region: one allocation of the application, a stable virtual range split
// into fixed-size pages (docs/architecture.md decisions 2 and 3).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/types.hpp"
#include "core/page_state.hpp"

namespace mqx {

using RegionId = std::uint64_t;

struct Region {
  RegionId id = 0;
  DevicePtr base = 0;
  std::size_t size = 0;         // bytes the application asked for
  std::size_t reservedSize = 0; // size rounded up to the device granularity
  std::size_t pageSize = 0;     // mapped bytes per page (the last page may map less)
  // The program reserved the range itself and mapped an allocation of mqx's
  // there (its own VMM: MemoryManager::adopt): freeing the region leaves the
  // range reserved, the program's to release.
  bool adopted = false;
  // Shared with other processes (MemoryManager::share, cuIpcGetMemHandle):
  // they read and write its device memory unseen, so from then on until it
  // is freed every page stays resident and its device memory is the only
  // copy: never evicted, written back ahead, or written lazily on the host.
  bool shared = false;
  std::vector<PageState> pages;
  std::uint64_t lastUse = 0;
  std::uint64_t useCount = 0;
  std::uint64_t previousUse = 0; // the use before lastUse (0: none): the reuse policy's interval
  // A pointer table: regions whose addresses were copied into this one from
  // the host or another table (docs/architecture.md, "pointer tables"). A
  // launch that references the table references them too.
  std::vector<RegionId> pointsTo;

  // A launch at logical time `now` used it (useCount is counted apart: a
  // use whose references are unknown does not count).
  void used(std::uint64_t now) {
    if (lastUse != now) previousUse = lastUse;
    lastUse = now;
  }

  // The one rule every part that would move a page's bytes asks (eviction,
  // the victim search, lazy copies and fills): the device memory of a shared
  // region is the only copy, the one other processes map.
  bool bytesStayOnDevice() const { return shared; }

  std::size_t pageCount() const { return pages.size(); }
  std::size_t pageOffset(std::size_t page) const { return page * pageSize; }
  // Bytes of device memory the page maps.
  std::size_t pageMappedBytes(std::size_t page) const { return std::min(pageSize, reservedSize - pageOffset(page)); }
  // Bytes of the page that hold application data (the rest is padding).
  std::size_t pageDataBytes(std::size_t page) const {
    std::size_t offset = pageOffset(page);
    return offset >= size ? 0 : std::min(pageSize, size - offset);
  }
  DevicePtr pageAddress(std::size_t page) const { return base + pageOffset(page); }
  bool contains(DevicePtr address) const { return address >= base && address < base + size; }

  std::size_t backedBytes() const;
  std::size_t dirtyBytes() const;
};

// One page that an operation needs on the device, and how it uses it.
struct PageUse {
  Region* region = nullptr;
  std::uint32_t page = 0;
  Access access = Access::Both;
};

// Identifies one page of one region, stable across directory changes.
struct PageKey {
  RegionId region = 0;
  std::uint32_t page = 0;
  friend bool operator==(const PageKey&, const PageKey&) = default;
  friend auto operator<=>(const PageKey&, const PageKey&) = default;
};

} // namespace mqx
