// PageMapper: the one owner of what goes with a page's mapping transitions
// (docs/architecture.md, "The life of a page"). PageStore says what a page
// is; the page mapper changes what is mapped under it and keeps the
// resources each change takes:
//   - device memory and host blocks mapped and unmapped under pages (the
//     only caller of DeviceBackend::map, unmap and mapHostBlocks);
//   - the device budget, charged through a BudgetReservation that gives its
//     bytes back when it goes out of scope unless a page's device memory
//     took them (the only caller of DeviceBudget::tryAcquire and release);
//   - the host images pages let go of (PreviousImage, handed back here),
//     whose slots and copy-on-write protection it gives back;
//   - the version that counts the changes after which a launch that may
//     reach every page must prepare the pages again;
//   - the one rule for whether in-flight device work may reach a page
//     (mayBeReached), which lazy transfers, eviction and backing ask before
//     they change a page.
// In-flight work is known to it by the pages' pins (ResidencyManager pins
// them) and by the fences of launches that may reach every page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.hpp"
#include "core/cow_tracker.hpp"
#include "core/device_budget.hpp"
#include "core/load_batch.hpp"
#include "core/page_store.hpp"
#include "core/region.hpp"
#include "core/statistics.hpp"
#include "core/swap_slots.hpp"
#include "device/device_backend.hpp"

namespace mqx {

// Bytes of the device budget taken for a page's device memory, given back
// when the reservation goes out of scope unless the page mapped them
// (DuckDB's BufferPoolReservation is the model). Empty when the budget had
// no room.
class [[nodiscard]] BudgetReservation {
public:
  BudgetReservation() = default;
  BudgetReservation(BudgetReservation&& other) noexcept;
  BudgetReservation& operator=(BudgetReservation&& other) noexcept;
  BudgetReservation(const BudgetReservation&) = delete;
  BudgetReservation& operator=(const BudgetReservation&) = delete;
  ~BudgetReservation() { reset(); }

  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return bytes_ != 0; }
  // `bytes` of this reservation as one of their own (empty when it holds
  // fewer): ResidencyManager's spare page backs a page with them.
  BudgetReservation split(std::size_t bytes);
  // Takes `other`'s bytes into this one (both of one budget).
  void absorb(BudgetReservation&& other);

private:
  friend class PageMapper;
  BudgetReservation(DeviceBudget& budget, std::size_t bytes) : budget_(&budget), bytes_(bytes) {}
  // Device memory mapped under a page holds the bytes now: the mapper gives
  // them back when it unmaps the page.
  void commit() { bytes_ = 0; }
  void reset();

  DeviceBudget* budget_ = nullptr;
  std::size_t bytes_ = 0;
};

// Device memory of mqx's own, beside every page's, paid by the budget:
// ResidencyManager::evict copies a dirty victim's bytes here on the device
// (tens of microseconds) and maps its host block under it at once, while
// the copy to that block runs from here (docs/architecture.md, "The staged
// write-back"). Gives its memory and budget back when it goes out of scope,
// once the last copy that used it (usedUntil) is done.
class [[nodiscard]] StagingMemory {
public:
  StagingMemory() = default;
  StagingMemory(StagingMemory&& other) noexcept { *this = std::move(other); }
  StagingMemory& operator=(StagingMemory&& other) noexcept;
  StagingMemory(const StagingMemory&) = delete;
  StagingMemory& operator=(const StagingMemory&) = delete;
  ~StagingMemory() { reset(); }

  explicit operator bool() const { return bytes_ != 0; }
  DevicePtr address() const { return address_; }
  std::size_t bytes() const { return bytes_; }
  // Device work up to `fence` reads or writes it: it is unmapped only after.
  void usedUntil(const device::Fence& fence) {
    lastUse_ = fence;
    used_ = true;
  }

private:
  friend class PageMapper;
  void reset();

  device::DeviceBackend* backend_ = nullptr;
  DeviceBudget* budget_ = nullptr;
  DevicePtr address_ = 0;
  std::size_t bytes_ = 0;
  device::Fence lastUse_;
  bool used_ = false;
};

// What the caller is about to do to a page, for PageMapper::mayBeReached.
enum class PageAccess {
  ReadImage,  // read its host image on the host (a lazy device-to-device copy's source)
  WriteImage, // replace or write its host image (a lazy copy or memset)
  Remap,      // change what is mapped under it (backing, eviction, freeing)
};

// A page leaving device memory, and the host block to map under it
// (mapBlocks): its swap image's slot, or a new block that it takes once
// mapped (a clean page's, pending until its image is written there).
struct BlockForPage {
  std::uint32_t page = 0;
  std::byte* image = nullptr; // its swap image's slot; null with no new block: mapToHost finds one
  SwapSlot newBlock;
};

class PageMapper {
public:
  PageMapper(device::DeviceBackend& backend, DeviceBudget& budget, SwapSlots& slots, CowTracker& cow,
             Statistics& statistics)
      : backend_(backend), budget_(budget), slots_(slots), cow_(cow), statistics_(statistics) {}

  // Whether pages that are not resident map host blocks (the swap buffer's
  // slots are host blocks): every page of a live region is then mapped.
  bool mapsHost() const { return slots_.mapsPages(); }

  // --- Budget ---

  // `bytes` of the budget, or an empty reservation when it has no room.
  BudgetReservation reserve(std::size_t bytes);

  // --- Mapping transitions ---

  // Maps device memory, paid by `reservation`, under the page, in place of
  // its host block if it has one (which no in-flight work may reach: the
  // caller asked mayBeReached). The block stays as the page's swap image if
  // it holds its bytes, else it goes back to the swap buffer. OutOfMemory
  // (the device is fuller than the budget says): the page keeps its block
  // and the reservation's bytes go back.
  Status mapToDevice(Region& region, std::uint32_t page, BudgetReservation reservation);
  // Gives the page's device memory back to the budget (its host image holds
  // its bytes; no in-flight work uses it). It maps nothing afterwards: the
  // caller maps its block (mapToHost, mapBlocks) where pages map host blocks.
  Status unmapFromDevice(Region& region, std::uint32_t page);
  // Maps the page (mapping nothing) to its host block: its swap slot if it
  // has one, else a new slot (over the limit if need be: a live page must be
  // mapped). OutOfMemory when no host block can be had.
  Status mapToHost(Region& region, std::uint32_t page);
  // Maps the blocks of pages that left device memory, in one call per run of
  // adjacent pages; a page without one gets it from mapToHost. A page whose
  // block cannot be mapped is left unmapped (leaveUnmapped), its new block
  // given back.
  Status mapBlocks(Region& region, std::span<BlockForPage> blocks);
  // A new region (mapsHost()): every page mapped from the start, device
  // memory while the budget has room (as cuMemAlloc would), else a host
  // block. Its zeros are written before any launch can read it.
  Status mapNewRegion(Region& region);
  // The region is freed (no in-flight work reaches it): each page lets go of
  // its host image, its host block and its device memory.
  Status releaseRegion(Region& region);
  // A page that is not resident got no host block: it stays unmapped.
  void leaveUnmapped(Status why);

  // Device memory of mqx's own, paid by `reservation` (its bytes), in a
  // virtual range of its own. OutOfMemory: the reservation goes back.
  Status mapStaging(BudgetReservation reservation, StagingMemory* staging);

  // --- Content transitions that a launch reaching every page must see ---

  // A load into the page's device memory was enqueued (PageStore::loaded).
  Status loaded(PageState& page);
  // The dirty page's bytes were copied into `slot`, which it keeps as its
  // image (PageStore::wroteBack); refused, the slot goes back.
  Status wroteBack(PageState& page, SwapSlot slot);
  // The host side wrote part of the page's swap image (PageStore::writtenOnHost).
  Status writtenOnHost(PageState& page);
  // Writes a pending page's image into its host block, which then holds its
  // bytes. Nothing to do for a page that is not pending.
  Status materialize(Region& region, std::uint32_t page);
  // Copies the page's host image into `slot`, which becomes its image.
  Status copyImageTo(Region& region, std::uint32_t page, SwapSlot slot);
  // Moves a swap image held in pageable memory into a host block, if one can
  // be had (the page can then map it).
  Status adoptBlock(Region& region, std::uint32_t page);
  // Takes back the image a transition of the page let go of and gives back
  // what it kept: its copy-on-write protection, or its swap slot unless that
  // is the page's host block (which stays mapped under it). A refused
  // transition's status is returned.
  Status handBack(const Region& region, std::uint32_t page, PreviousImage previous);
  // The same for a transition that made `taken` the page's image: the page
  // keeps the slot when the transition was accepted, else it goes back.
  Status handBack(const Region& region, std::uint32_t page, PreviousImage previous, SwapSlot& taken);

  // --- In-flight work ---

  // Whether in-flight device work may reach the page where `access` would
  // touch it: the one rule, asked before any change to a page.
  bool mayBeReached(const PageState& page, PageAccess access);
  // Device work enqueued before `fence` may reach any page of the process (a
  // launch whose references are not known).
  // `stream` is the one it was enqueued on (orderLoadsAfterReaders).
  void reachesEveryPage(const device::Fence& fence, StreamHandle stream = 0);
  // A fence of reachesEveryPage is not yet reached.
  bool everyPageReachable();
  // Waits until no launch that may reach every page still runs.
  Status waitForEveryPageWork();
  // reachesEveryPage calls so far: a write-back ahead is void if one came
  // while it ran.
  std::uint64_t everyPageLaunches() const { return everyPageLaunches_; }
  // Loads were issued that read what `sources` says.
  void loadsIssued(const LoadSources& sources);
  // The host wrote the image of a page on device memory (a lazy copy or
  // memset). Kernels read the page there, not its image, but the new image
  // is loaded before the next launch that needs it, on the transfer
  // stream: while a launch that may reach every page runs, that load must
  // follow it, or the launch reads bytes written after it on its stream.
  void imageRewritten(const PageState& page);
  // Orders `transfers` (the host-to-device stream, before it loads) after
  // the launches that may reach every page still running, when an image was
  // rewritten under them (imageRewritten); where a stream cannot be ordered
  // (destroyed since), waits for its launches instead.
  Status orderLoadsAfterReaders(StreamHandle transfers);
  // Waits until no load still reads an application buffer: a copy-on-write
  // source may be changed or released only then.
  void waitForSourceReads();

  // --- Versions ---

  // Counts changes that may leave a page pending, or a resident page with a
  // host image or not valid on the device: a launch that may reach every
  // page prepares the pages again only when this changed.
  std::uint64_t version() const { return version_; }
  // Counts pages left pending by remaps (a host block mapped under a page
  // whose image is not written there).
  std::uint64_t pendingPagesMade() const { return pendingPagesMade_; }

private:
  // Gives back what `image` held for the page, whose host block is `block`.
  void releaseImage(const Region& region, std::uint32_t page, const HostImage& image, const std::byte* block);

  device::DeviceBackend& backend_;
  DeviceBudget& budget_;
  SwapSlots& slots_;
  CowTracker& cow_;
  Statistics& statistics_;
  struct EveryPageWork {
    device::Fence fence;
    StreamHandle stream = 0;
  };
  std::vector<EveryPageWork> everyPageWork_; // reachesEveryPage's fences not yet seen reached
  bool imagesRewrittenUnderReaders_ = false; // imageRewritten, not yet ordered
  std::uint64_t everyPageLaunches_ = 0;
  bool sourceReadsInFlight_ = false;
  bool warnedUnmapped_ = false;
  std::uint64_t version_ = 0;
  std::uint64_t pendingPagesMade_ = 0;
};

} // namespace mqx
