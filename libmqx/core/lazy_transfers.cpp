#include "core/lazy_transfers.hpp"

#include <cstring>
#include <memory>

#include "core/host_image.hpp"
#include "core/page_store.hpp"

namespace mqx {

void LazyTransfers::countAvoidedLoad(const Region& region, std::uint32_t index) {
  const PageState& page = region.pages[index];
  const bool lazyData = page.host().kind == HostImageKind::CowSource || page.host().kind == HostImageKind::Swap;
  if (lazyData && !page.deviceValid()) statistics_.bytesAvoidedLazy += region.pageDataBytes(index);
}

Status LazyTransfers::replaceHostImage(Region& region, std::uint32_t index, HostImage image, SwapSlot slot) {
  countAvoidedLoad(region, index);
  PageState& page = region.pages[index];
  // A page on a host block keeps its block (which it maps) and takes the
  // bytes there instead; the slot goes back.
  if (image.kind == HostImageKind::Swap && page.hostMapped() && image.slot != page.backing()) {
    std::memcpy(page.backing(), image.slot, region.pageDataBytes(index));
    image = HostImage::inSwap(page.backing());
    slot.reset();
  }
  mapper_.imageRewritten(page);
  return mapper_.handBack(region, index, PageStore::imageReplaced(page, std::move(image)), slot);
}

Status LazyTransfers::readDeviceToSlot(Region& region, std::uint32_t index, std::byte* slot) {
  const StreamHandle toHost = backend_.transferStream(device::TransferDirection::ToHost);
  MQX_TRY(backend_.order(backend_.transferStream(device::TransferDirection::ToDevice), toHost));
  MQX_TRY(backend_.copyToHost(slot, region.pageAddress(index), region.pageDataBytes(index), toHost, slots_.pinned()));
  device::Fence done;
  MQX_TRY(backend_.enqueueFence(toHost, &done));
  MQX_TRY(backend_.waitFence(done));
  statistics_.bytesToHost += region.pageDataBytes(index);
  return Status::Success;
}

Status LazyTransfers::materializeSwap(Region& region, std::uint32_t index, std::byte** slot) {
  *slot = nullptr;
  PageState& page = region.pages[index];
  if (page.hostMapped()) { // its host block holds its bytes
    MQX_TRY(mapper_.materialize(region, index));
    *slot = page.backing();
    return Status::Success;
  }
  if (page.host().kind == HostImageKind::Swap) {
    *slot = page.host().slot;
    return Status::Success;
  }
  SwapSlot acquired = slots_.acquire(region.pageMappedBytes(index));
  if (!acquired) return Status::Success;
  std::byte* copy = acquired.get();
  if (page.host().kind == HostImageKind::None) {
    if (!ok(readDeviceToSlot(region, index, copy))) return Status::Success;
    MQX_TRY(mapper_.wroteBack(page, std::move(acquired)));
  } else {
    MQX_TRY(mapper_.copyImageTo(region, index, std::move(acquired)));
  }
  *slot = copy;
  return Status::Success;
}

std::optional<HostImage> LazyTransfers::cowImage(Region& region, const Piece& piece, const std::byte* source,
                                                 const CowExtent& extent) {
  HostImage image = HostImage::inBuffer(source);
  if (extent.head + extent.tail != 0) {
    auto edges = std::make_shared<SourceEdges>();
    edges->headBytes = extent.head;
    edges->tailBytes = extent.tail;
    edges->tailStart = piece.bytes - extent.tail;
    edges->bytes = std::make_unique_for_overwrite<std::byte[]>(extent.head + extent.tail);
    std::memcpy(edges->bytes.get(), source, extent.head);
    std::memcpy(edges->bytes.get() + extent.head, source + edges->tailStart, extent.tail);
    image.edges = std::move(edges);
  }
  if (!cow_.protect(image.protectedStart(), image.protectedBytes(piece.bytes), PageKey{region.id, piece.page}))
    return std::nullopt;
  statistics_.bytesCopiedOnHost += extent.head + extent.tail;
  return image;
}

Status LazyTransfers::copyFromHost(Region& region, const Piece& piece, const std::byte* source, const CowExtent& extent,
                                   bool* done) {
  *done = true;
  PageState& page = region.pages[piece.page];
  const bool lazy =
      options_.lazyTransfer && !region.bytesStayOnDevice() && !mapper_.mayBeReached(page, PageAccess::WriteImage);
  if (lazy && coversPage(region, piece)) {
    // protect() records this page's reference to the source before the old
    // image (which may be the same source) lets go of its own.
    if (auto image = extent.allowed ? cowImage(region, piece, source, extent) : std::nullopt)
      return replaceHostImage(region, piece.page, std::move(*image));
    if (SwapSlot slot = slots_.acquire(region.pageMappedBytes(piece.page))) {
      std::memcpy(slot.get(), source, piece.bytes);
      statistics_.bytesCopiedOnHost += piece.bytes;
      const HostImage image = HostImage::inSwap(slot.get());
      return replaceHostImage(region, piece.page, image, std::move(slot));
    }
  } else if (lazy && !page.dirty()) {
    std::byte* slot = nullptr;
    MQX_TRY(materializeSwap(region, piece.page, &slot));
    if (slot != nullptr) {
      std::memcpy(slot + piece.offset, source, piece.bytes);
      statistics_.bytesCopiedOnHost += piece.bytes;
      return mapper_.writtenOnHost(page);
    }
  }
  *done = false;
  return Status::Success;
}

Status LazyTransfers::fill(Region& region, const Piece& piece, std::uint32_t pattern, unsigned elementSize,
                           bool* done) {
  *done = true;
  PageState& page = region.pages[piece.page];
  const bool lazy =
      options_.lazyTransfer && !region.bytesStayOnDevice() && !mapper_.mayBeReached(page, PageAccess::WriteImage);
  if (lazy && coversPage(region, piece) && piece.bytes % elementSize == 0) {
    HostImage image = HostImage::filled(elementSize, pattern);
    if (elementSize == 1 && pattern == 0) image = HostImage::of(HostImageKind::Zero);
    return replaceHostImage(region, piece.page, image);
  }
  if (lazy && !page.dirty()) {
    std::byte* slot = nullptr;
    MQX_TRY(materializeSwap(region, piece.page, &slot));
    if (slot != nullptr) {
      const HostImage fill = HostImage::filled(elementSize, pattern);
      // Fill phase: the memset starts element-aligned, and so does the piece.
      readHostImage(fill, 0, piece.bytes, slot + piece.offset);
      return mapper_.writtenOnHost(page);
    }
  }
  *done = false;
  return Status::Success;
}

Status LazyTransfers::copyImage(Region& destination, const Piece& piece, Region& source, DevicePtr sourceAddress,
                                bool* done) {
  *done = false;
  if (!options_.lazyTransfer || destination.bytesStayOnDevice() || source.bytesStayOnDevice() ||
      !coversPage(destination, piece))
    return Status::Success;
  const std::size_t sourceOffset = sourceAddress - source.base;
  if (sourceOffset % source.pageSize != 0) return Status::Success;
  const auto sourceIndex = static_cast<std::uint32_t>(sourceOffset / source.pageSize);
  const PageState& from = source.pages[sourceIndex];
  const PageState& to = destination.pages[piece.page];
  // A source on its host block may still be written through it by in-flight
  // work (a kernel on another stream, which the application ordered before
  // this copy on the device, not on the host): its image is read here, on
  // the host, at once, so such a source is copied on the device instead, in
  // stream order (found by the differential test's StreamsByDependencies
  // variants).
  if (source.pageDataBytes(sourceIndex) != piece.bytes || from.host().kind == HostImageKind::None ||
      mapper_.mayBeReached(to, PageAccess::WriteImage) || mapper_.mayBeReached(from, PageAccess::ReadImage) ||
      (&source == &destination && sourceIndex == piece.page))
    return Status::Success;
  HostImage image = from.host();
  SwapSlot slot;
  if (image.kind == HostImageKind::CowSource) {
    // The destination shares the source's saved edges too.
    if (!cow_.protect(image.protectedStart(), image.protectedBytes(piece.bytes), PageKey{destination.id, piece.page}))
      return Status::Success;
  } else if (image.kind == HostImageKind::Swap) {
    slot = slots_.acquire(destination.pageMappedBytes(piece.page));
    if (!slot) return Status::Success;
    std::memcpy(slot.get(), image.slot, piece.bytes);
    image.slot = slot.get();
  }
  *done = true;
  return replaceHostImage(destination, piece.page, image, std::move(slot));
}

Status LazyTransfers::breakCow(const CowRecord& record) {
  Region* region = directory_.byId(record.owner.region);
  if (region == nullptr) return Status::Success;
  const std::uint32_t index = record.owner.page;
  PageState& page = region->pages[index];
  mapper_.waitForSourceReads(); // a load may still be reading the source
  if (page.deviceValid())       // the device copy is now the only one
    return mapper_.handBack(*region, index, PageStore::imageDropped(page));
  // Over the limit if need be: failing here would lose the application's data.
  const std::size_t bytes = region->pageDataBytes(index);
  statistics_.cowBytesSaved += bytes;
  if (page.hostMapped()) return mapper_.materialize(*region, index); // its host block takes the bytes
  return mapper_.copyImageTo(*region, index, slots_.acquire(region->pageMappedBytes(index), true));
}

Status LazyTransfers::prepareHostWrite(std::uintptr_t address, std::size_t bytes) {
  if (!cow_.anyProtected() || bytes == 0) return Status::Success;
  for (const CowRecord& record : cow_.overlapping(address, bytes))
    MQX_TRY(breakCow(record));
  // Lingering protection too: whoever writes next is not the application.
  cow_.releaseLingering(address, bytes);
  return Status::Success;
}

} // namespace mqx
