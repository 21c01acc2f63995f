// LazyTransfers: the host side of copies and memsets (docs/architecture.md
// decision 5, paper §4.1 "lazy transfers"). A page that no device work can
// see takes new content as a host image (the application's buffer under
// copy-on-write protection, a swap slot, a fill pattern) instead of a
// transfer; the transfer happens, if ever, when a launch reads the page.
// Also saves a copy-on-write source before the application (or anyone else)
// changes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/status.hpp"
#include "core/cow_tracker.hpp"
#include "core/page_mapper.hpp"
#include "core/page_pieces.hpp"
#include "core/region_directory.hpp"
#include "core/statistics.hpp"
#include "core/swap_slots.hpp"
#include "device/device_backend.hpp"

namespace mqx {

struct LazyTransferOptions {
  bool lazyTransfer = true; // Config::lazyTransfer: off, every copy and memset runs on the device
};

// How much of a copy's piece may be left in the application's buffer: all of
// it but `head` bytes at its start and `tail` bytes at its end, which lie on
// host pages shared with other data (SourceEdges).
struct CowExtent {
  bool allowed = false;
  std::size_t head = 0;
  std::size_t tail = 0;
};

class LazyTransfers {
public:
  LazyTransfers(LazyTransferOptions options, PageMapper& mapper, SwapSlots& slots, CowTracker& cow,
                RegionDirectory& directory, device::DeviceBackend& backend, Statistics& statistics)
      : options_(options), mapper_(mapper), slots_(slots), cow_(cow), directory_(directory), backend_(backend),
        statistics_(statistics) {}

  // Each of these sets *done to whether it did the piece's work on the host;
  // where it did not (the page is in use on the device, holds the only copy,
  // laziness is off, the swap buffer is full), the caller enqueues it on the
  // device.
  // A copy of `piece` from the application's `source`.
  Status copyFromHost(Region& region, const Piece& piece, const std::byte* source, const CowExtent& extent, bool* done);
  // A memset of `piece`.
  Status fill(Region& region, const Piece& piece, std::uint32_t pattern, unsigned elementSize, bool* done);
  // A device-to-device copy into `piece` from `sourceAddress` of `source`:
  // a whole page held on the host is shared or copied as a host image.
  Status copyImage(Region& destination, const Piece& piece, Region& source, DevicePtr sourceAddress, bool* done);

  // The application's buffer under `record` is about to change: the page
  // that reads it keeps the bytes it had.
  Status breakCow(const CowRecord& record);
  // Host memory [address, address + bytes) is about to be written by
  // someone other than the application: no copy-on-write protection is left
  // there.
  Status prepareHostWrite(std::uintptr_t address, std::size_t bytes);
  // The page's lazily held data goes unread (its region is freed): counted
  // as a transfer avoided.
  void countAvoidedLoad(const Region& region, std::uint32_t page);

private:
  // Installs `image` as the page's only copy (`slot`: its swap slot, for a
  // Swap image). The new image is acquired by the caller before the old one
  // goes, so that a failure loses nothing.
  Status replaceHostImage(Region& region, std::uint32_t page, HostImage image, SwapSlot slot = {});
  // Gives the page a swap-slot image holding its current content; *slot
  // null when the swap buffer is full.
  Status materializeSwap(Region& region, std::uint32_t page, std::byte** slot);
  // Copies the page's device content into `slot` and waits for it (the page
  // must not be pinned by work that writes it).
  Status readDeviceToSlot(Region& region, std::uint32_t page, std::byte* slot);
  // The piece's source as a copy-on-write image: its edges saved, the rest
  // write-protected (and recorded as read by the page). Nullopt when the
  // source cannot be protected.
  std::optional<HostImage> cowImage(Region& region, const Piece& piece, const std::byte* source,
                                    const CowExtent& extent);

  LazyTransferOptions options_;
  PageMapper& mapper_;
  SwapSlots& slots_;
  CowTracker& cow_;
  RegionDirectory& directory_;
  device::DeviceBackend& backend_;
  Statistics& statistics_;
};

} // namespace mqx
