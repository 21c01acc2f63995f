#include "core/page_mapper.hpp"

#include <algorithm>
#include <utility>

#include "common/log.hpp"
#include "core/host_image.hpp"

namespace mqx {

BudgetReservation::BudgetReservation(BudgetReservation&& other) noexcept
    : budget_(other.budget_), bytes_(std::exchange(other.bytes_, 0)) {}

BudgetReservation& BudgetReservation::operator=(BudgetReservation&& other) noexcept {
  if (this != &other) {
    reset();
    budget_ = other.budget_;
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void BudgetReservation::reset() {
  if (bytes_ != 0) budget_->release(std::exchange(bytes_, 0));
}

BudgetReservation BudgetReservation::split(std::size_t bytes) {
  if (bytes == 0 || bytes > bytes_) return {};
  bytes_ -= bytes;
  return BudgetReservation(*budget_, bytes);
}

void BudgetReservation::absorb(BudgetReservation&& other) {
  if (other.bytes_ == 0) return;
  if (budget_ == nullptr) budget_ = other.budget_;
  bytes_ += std::exchange(other.bytes_, 0);
}

StagingMemory& StagingMemory::operator=(StagingMemory&& other) noexcept {
  if (this != &other) {
    reset();
    backend_ = other.backend_;
    budget_ = other.budget_;
    address_ = other.address_;
    bytes_ = std::exchange(other.bytes_, 0);
    lastUse_ = other.lastUse_;
    used_ = std::exchange(other.used_, false);
  }
  return *this;
}

void StagingMemory::reset() {
  if (bytes_ == 0) return;
  // A copy may still read it: unmapped under it, the copy would fault.
  if (used_)
    if (Status waited = backend_->waitFence(lastUse_); !ok(waited)) {
      log(LogLevel::Error, "waiting for the copies from the staging memory: {}; its memory is kept", toString(waited));
      bytes_ = 0; // lost rather than unmapped under a copy; the budget keeps its bytes
      return;
    }
  if (Status unmapped = backend_->unmap(address_, bytes_); !ok(unmapped))
    log(LogLevel::Warn, "unmapping the staging memory: {}", toString(unmapped));
  if (Status released = backend_->release(address_, bytes_); !ok(released))
    log(LogLevel::Warn, "releasing the staging memory's range: {}", toString(released));
  budget_->release(std::exchange(bytes_, 0));
  used_ = false;
}

Status PageMapper::mapStaging(BudgetReservation reservation, StagingMemory* staging) {
  const std::size_t bytes = reservation.bytes();
  if (bytes == 0 || staging == nullptr) return Status::InvalidValue;
  DevicePtr address = 0;
  MQX_TRY(backend_.reserve(bytes, &address));
  if (Status mapped = backend_.map(address, bytes); !ok(mapped)) {
    (void)backend_.release(address, bytes);
    return mapped;
  }
  reservation.commit(); // the staging memory holds the bytes until it goes
  *staging = StagingMemory{};
  staging->backend_ = &backend_;
  staging->budget_ = &budget_;
  staging->address_ = address;
  staging->bytes_ = bytes;
  return Status::Success;
}

BudgetReservation PageMapper::reserve(std::size_t bytes) {
  if (bytes == 0 || !budget_.tryAcquire(bytes)) return {};
  return BudgetReservation(budget_, bytes);
}

Status PageMapper::mapToDevice(Region& region, std::uint32_t index, BudgetReservation reservation) {
  const std::size_t bytes = region.pageMappedBytes(index);
  if (reservation.bytes() != bytes) return Status::InvalidValue; // a reservation for another page
  PageState& page = region.pages[index];
  const DevicePtr address = region.pageAddress(index);
  std::byte* block = page.backing();
  if (block != nullptr) MQX_TRY(backend_.unmap(address, bytes));
  if (Status mapped = backend_.map(address, bytes); !ok(mapped)) {
    if (block != nullptr) { // the page keeps its block: mapped again
      const device::HostBlock* host = slots_.blockOf(block);
      const Status restored = host != nullptr ? backend_.mapHost(address, *host) : Status::Unknown;
      if (!ok(restored)) {
        log(LogLevel::Error, "a page lost its host mapping: {}", toString(restored));
        return restored;
      }
    }
    return mapped;
  }
  reservation.commit(); // the page's device memory holds the bytes until unmapFromDevice
  MQX_TRY(PageStore::mappedToDevice(page));
  ++version_;
  const bool image = page.host().kind == HostImageKind::Swap && page.host().slot == block;
  if (block != nullptr && !image) slots_.release(block, bytes);
  return Status::Success;
}

Status PageMapper::unmapFromDevice(Region& region, std::uint32_t index) {
  const std::size_t bytes = region.pageMappedBytes(index);
  MQX_TRY(backend_.unmap(region.pageAddress(index), bytes));
  budget_.release(bytes);
  MQX_TRY(PageStore::unbacked(region.pages[index]));
  ++version_;
  return Status::Success;
}

Status PageMapper::mapToHost(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  MQX_TRY(adoptBlock(region, index));
  // Its swap image's slot, else a new one, which goes back unless mapped.
  SwapSlot newBlock;
  if (page.host().kind != HostImageKind::Swap) newBlock = slots_.acquire(region.pageMappedBytes(index), true, true);
  std::byte* slot = newBlock ? newBlock.get() : page.host().slot;
  const device::HostBlock* block = slot != nullptr ? slots_.blockOf(slot) : nullptr;
  // No log here: the callers leave the page unmapped and say so once per
  // process (leaveUnmapped); a line per page would flood the log.
  if (block == nullptr) return Status::OutOfMemory;
  MQX_TRY(backend_.mapHost(region.pageAddress(index), *block));
  newBlock.commit(); // mapped under the page
  MQX_TRY(PageStore::mappedToBacking(page, slot));
  ++version_;
  if (page.pending()) ++pendingPagesMade_;
  return Status::Success;
}

Status PageMapper::mapBlocks(Region& region, std::span<BlockForPage> blocks) {
  if (!mapsHost()) return Status::Success;
  // Adjacent pages in address order, so that the backend sets access once
  // per run.
  std::ranges::sort(blocks, {}, &BlockForPage::page);
  std::vector<device::HostMapping> batch;
  std::vector<BlockForPage*> batched;
  for (BlockForPage& entry : blocks) {
    std::byte* slot = entry.newBlock ? entry.newBlock.get() : entry.image;
    const device::HostBlock* block = slot != nullptr ? slots_.blockOf(slot) : nullptr;
    if (block != nullptr) {
      batch.push_back(device::HostMapping{region.pageAddress(entry.page), *block});
      batched.push_back(&entry);
    } else if (Status status = mapToHost(region, entry.page); !ok(status)) {
      leaveUnmapped(status);
    }
  }
  if (batch.empty()) return Status::Success;
  if (Status status = backend_.mapHostBlocks(batch); !ok(status)) {
    leaveUnmapped(status); // the new blocks go back with their entries
    return Status::Success;
  }
  ++version_;
  for (BlockForPage* entry : batched) {
    PageState& page = region.pages[entry->page];
    std::byte* slot = entry->newBlock ? entry->newBlock.commit() : entry->image; // mapped under the page
    MQX_TRY(PageStore::mappedToBacking(page, slot));
    if (page.pending()) ++pendingPagesMade_;
  }
  return Status::Success;
}

Status PageMapper::mapNewRegion(Region& region) {
  for (std::uint32_t i = 0; i < region.pageCount(); ++i) {
    Status status = Status::OutOfMemory;
    if (BudgetReservation reservation = reserve(region.pageMappedBytes(i)))
      status = mapToDevice(region, i, std::move(reservation));
    if (!ok(status)) status = mapToHost(region, i);
    if (!ok(status)) leaveUnmapped(status); // backed at its first use, as without host blocks
  }
  ++version_;
  return Status::Success;
}

Status PageMapper::releaseRegion(Region& region) {
  // Every page's host image first, then its mappings: the region goes, and
  // so does each page's host block.
  std::vector<PageState> previous(region.pageCount());
  for (std::uint32_t index = 0; index < region.pageCount(); ++index) {
    MQX_TRY(PageStore::released(region.pages[index], previous[index]));
    releaseImage(region, index, previous[index].host(), previous[index].backing());
  }
  ++version_;
  // Every page lets go, whatever one unmap says: the region is gone either way.
  FirstFailure unmapped;
  for (std::uint32_t index = 0; index < region.pageCount(); ++index) {
    const PageState& page = previous[index];
    const std::size_t bytes = region.pageMappedBytes(index);
    if (page.hostMapped()) {
      unmapped.note(backend_.unmap(region.pageAddress(index), bytes));
      slots_.release(page.backing(), bytes);
    }
    if (!page.backed()) continue;
    unmapped.note(backend_.unmap(region.pageAddress(index), bytes));
    budget_.release(bytes);
  }
  return unmapped.status();
}

void PageMapper::leaveUnmapped(Status why) {
  // No host block to be had (the system refuses to pin more memory): the
  // page is left unmapped, as where the device cannot map host memory at all
  // (docs/architecture.md, decision 2). Its bytes are safe in its image; a
  // kernel that reaches it unforeseen faults. Said once per process.
  if (warnedUnmapped_) return;
  warnedUnmapped_ = true;
  log(LogLevel::Warn, "no host block for a page that is not resident ({}): such pages stay unmapped", toString(why));
}

Status PageMapper::loaded(PageState& page) {
  MQX_TRY(PageStore::loaded(page));
  ++version_; // a resident page with a host image
  return Status::Success;
}

Status PageMapper::wroteBack(PageState& page, SwapSlot slot) {
  MQX_TRY(PageStore::wroteBack(page, slot.get()));
  slot.commit(); // the page's image
  ++version_;    // a resident page with a host image
  return Status::Success;
}

Status PageMapper::writtenOnHost(PageState& page) {
  MQX_TRY(PageStore::writtenOnHost(page));
  imageRewritten(page);
  ++version_; // its device copy, if any, is stale
  return Status::Success;
}

Status PageMapper::materialize(Region& region, std::uint32_t index) {
  PageState& page = region.pages[index];
  if (!page.pending()) return Status::Success;
  // Written by the CPU: the page is not backed, and no in-flight work
  // reaches a pending page (every launch that may reach it materializes it
  // first, and lazy writes happen only to pages no work reaches).
  readHostImage(page.host(), 0, region.pageDataBytes(index), page.backing());
  statistics_.bytesCopiedOnHost += region.pageDataBytes(index);
  return handBack(region, index, PageStore::materialized(page));
}

Status PageMapper::copyImageTo(Region& region, std::uint32_t index, SwapSlot slot) {
  PageState& page = region.pages[index];
  readHostImage(page.host(), 0, region.pageDataBytes(index), slot.get()); // saved edges included
  return handBack(region, index, PageStore::imageCopied(page, slot.get()), slot);
}

Status PageMapper::adoptBlock(Region& region, std::uint32_t index) {
  const PageState& page = region.pages[index];
  if (page.host().kind != HostImageKind::Swap || slots_.blockOf(page.host().slot) != nullptr) return Status::Success;
  // A swap image in pageable memory (no block could be had when it was
  // made) moves to a block, which the page can map; if none can be had
  // either, the image stays and the page keeps its device memory.
  SwapSlot block = slots_.acquire(region.pageMappedBytes(index), true, true);
  if (!block) return Status::Success;
  return copyImageTo(region, index, std::move(block));
}

Status PageMapper::handBack(const Region& region, std::uint32_t index, PreviousImage previous) {
  if (!previous.accepted()) return previous.status();
  releaseImage(region, index, previous.take(), region.pages[index].backing());
  ++version_;
  return Status::Success;
}

Status PageMapper::handBack(const Region& region, std::uint32_t index, PreviousImage previous, SwapSlot& taken) {
  if (previous.accepted()) taken.commit(); // the page's image now
  return handBack(region, index, std::move(previous));
}

void PageMapper::releaseImage(const Region& region, std::uint32_t index, const HostImage& image,
                              const std::byte* block) {
  if (image.kind == HostImageKind::CowSource) {
    waitForSourceReads();
    const std::size_t bytes = image.protectedBytes(region.pageDataBytes(index));
    cow_.unprotect(image.protectedStart(), bytes, PageKey{region.id, index});
  } else if (image.kind == HostImageKind::Swap && image.slot != block) {
    slots_.quarantine(image.slot, region.pageMappedBytes(index));
  } // a page's host block stays mapped under it (until the region goes)
}

bool PageMapper::mayBeReached(const PageState& page, PageAccess access) {
  // Work that names the page pinned it. A launch whose references are not
  // known (everyPageReachable) may reach whatever is mapped under any page:
  // device memory, or a host block, which is also the page's image when it
  // holds its bytes.
  switch (access) {
  case PageAccess::ReadImage:
    // Device work changes a host image only through the host block it is:
    // the image of a page on device memory stays as the host left it.
    return page.hostMapped() && (page.pinned() || everyPageReachable());
  case PageAccess::WriteImage:
    // A pinned page's content is in use (PageStore refuses). Unpinned, a
    // page on device memory is read there, never from its image; the load
    // of its new image follows the launches in flight (imageRewritten).
    return page.pinned() || (page.hostMapped() && everyPageReachable());
  case PageAccess::Remap: return page.pinned() || ((page.backed() || page.hostMapped()) && everyPageReachable());
  }
  return true;
}

void PageMapper::reachesEveryPage(const device::Fence& fence, StreamHandle stream) {
  ++everyPageLaunches_;
  // Fences of one slot (stream) are reached in order: the newest stands for
  // the older ones, so the list holds one fence per stream at most, however
  // many launches a program makes without anyone asking.
  for (EveryPageWork& known : everyPageWork_)
    if (known.fence.slot == fence.slot) {
      known.fence.value = std::max(known.fence.value, fence.value);
      known.stream = stream;
      return;
    }
  everyPageWork_.push_back({fence, stream});
}

bool PageMapper::everyPageReachable() {
  std::erase_if(everyPageWork_, [&](const EveryPageWork& work) { return backend_.fenceReached(work.fence); });
  return !everyPageWork_.empty();
}

Status PageMapper::waitForEveryPageWork() {
  while (everyPageReachable())
    MQX_TRY(backend_.waitFence(everyPageWork_.front().fence));
  return Status::Success;
}

void PageMapper::imageRewritten(const PageState& page) {
  if (page.backed() && everyPageReachable()) imagesRewrittenUnderReaders_ = true;
}

Status PageMapper::orderLoadsAfterReaders(StreamHandle transfers) {
  if (!std::exchange(imagesRewrittenUnderReaders_, false) || !everyPageReachable()) return Status::Success;
  // Each stream's whole queue so far, the launches that may read the old
  // bytes among it (SparePageTest.KernelsThroughPointerTablesSeeTheTableWrittenBeforeThem).
  for (const EveryPageWork& work : everyPageWork_)
    if (!ok(backend_.order(work.stream, transfers))) MQX_TRY(backend_.waitFence(work.fence));
  return Status::Success;
}

void PageMapper::loadsIssued(const LoadSources& sources) {
  sourceReadsInFlight_ = sourceReadsInFlight_ || sources.applicationBuffers;
  if (sources.swapSlots) slots_.loadsRead();
}

void PageMapper::waitForSourceReads() {
  if (!sourceReadsInFlight_) return;
  // A failed wait is a broken context (its error is sticky): the program's
  // next CUDA call reports it.
  const StreamHandle toDevice = backend_.transferStream(device::TransferDirection::ToDevice);
  if (Status waited = backend_.synchronize(toDevice); !ok(waited))
    log(LogLevel::Error, "waiting for the loads that read the program's buffers: {}", toString(waited));
  sourceReadsInFlight_ = false;
}

} // namespace mqx
