#include "core/page_store.hpp"

#include <limits>
#include <utility>

#include "common/log.hpp"

namespace mqx {
namespace {

const char* kindName(HostImageKind kind) {
  switch (kind) {
  case HostImageKind::None: return "none";
  case HostImageKind::Zero: return "zero";
  case HostImageKind::Fill: return "fill";
  case HostImageKind::CowSource: return "copy-on-write source";
  case HostImageKind::Swap: return "swap";
  }
  return "unknown";
}

// A refused transition is a bug in mqx: said with the page's state, which it
// leaves as it was.
Status refuse(const char* transition, const char* why, const PageState& page) {
  log(LogLevel::Error,
      "page transition '{}' refused: {} (host image {}, backed {}, host block {}, device copy valid {}, pins {})",
      transition, why, kindName(page.host().kind), page.backed(), page.hostMapped(), page.deviceValid(), page.pins());
  return Status::Unknown;
}

PreviousImage refusedImage(const char* transition, const char* why, const PageState& page) {
  return PreviousImage::refused(refuse(transition, why, page));
}

} // namespace

PreviousImage& PreviousImage::operator=(PreviousImage&& other) noexcept {
  if (this != &other) {
    this->~PreviousImage(); // reports an image overwritten before it was handed back
    status_ = other.status_;
    image_ = other.take();
  }
  return *this;
}

PreviousImage::~PreviousImage() {
  if (image_.kind != HostImageKind::None)
    log(LogLevel::Error, "a page's previous host image ({}) was never handed back: what it held is lost",
        kindName(image_.kind));
}

const char* PageStore::inconsistency(const HostImage& host, bool backed, const std::byte* backing, bool deviceValid) {
  if (!deviceValid && host.kind == HostImageKind::None) return "no copy would hold the page's bytes";
  if (deviceValid && !backed) return "a valid device copy would lie in no device memory";
  if (backed && backing != nullptr) return "device memory and a host block would be mapped at once";
  if (backing != nullptr && host.kind == HostImageKind::Swap && host.slot != backing)
    return "the swap image would lie apart from the host block the page maps";
  return nullptr;
}

Status PageStore::mappedToDevice(PageState& page) {
  constexpr const char* kName = "mapped to device";
  if (page.backed_) return refuse(kName, "the page already has device memory", page);
  if (page.hostMapped() && page.pinned()) return refuse(kName, "in-flight work may reach its host block", page);
  if (const char* why = inconsistency(page.host_, true, nullptr, page.deviceValid_)) return refuse(kName, why, page);
  page.backed_ = true;
  page.backing_ = nullptr;
  changed(page);
  return Status::Success;
}

Status PageStore::unbacked(PageState& page) {
  constexpr const char* kName = "unbacked";
  if (!page.backed_) return refuse(kName, "the page has no device memory", page);
  if (page.pinned()) return refuse(kName, "in-flight work uses its device memory", page);
  if (const char* why = inconsistency(page.host_, false, page.backing_, false)) return refuse(kName, why, page);
  page.backed_ = false;
  page.deviceValid_ = false;
  changed(page);
  return Status::Success;
}

Status PageStore::mappedToBacking(PageState& page, std::byte* slot) {
  constexpr const char* kName = "mapped to backing";
  if (slot == nullptr) return refuse(kName, "no host block given", page);
  if (page.backed_) return refuse(kName, "the page has device memory", page);
  if (page.hostMapped()) return refuse(kName, "the page already maps a host block", page);
  if (const char* why = inconsistency(page.host_, false, slot, page.deviceValid_)) return refuse(kName, why, page);
  page.backing_ = slot;
  changed(page);
  return Status::Success;
}

Status PageStore::released(PageState& page, PageState& previous) {
  if (page.pinned()) return refuse("released", "in-flight work uses the page", page);
  previous = page;
  page.host_ = HostImage::of(HostImageKind::None);
  page.backed_ = false;
  page.backing_ = nullptr;
  page.deviceValid_ = false;
  changed(page);
  return Status::Success;
}

Status PageStore::loaded(PageState& page) {
  constexpr const char* kName = "loaded";
  if (!page.backed_) return refuse(kName, "the page has no device memory to load into", page);
  if (page.deviceValid_) return refuse(kName, "the device copy is already valid", page);
  if (page.host_.kind == HostImageKind::None) return refuse(kName, "no host image to load from", page);
  if (const char* why = inconsistency(page.host_, true, page.backing_, true)) return refuse(kName, why, page);
  page.deviceValid_ = true;
  changed(page);
  return Status::Success;
}

PreviousImage PageStore::writtenOnDevice(PageState& page) {
  constexpr const char* kName = "written on device";
  if (!page.backed_) return refusedImage(kName, "the page has no device memory", page);
  const HostImage none = HostImage::of(HostImageKind::None);
  if (const char* why = inconsistency(none, true, page.backing_, true)) return refusedImage(kName, why, page);
  PreviousImage previous(std::exchange(page.host_, none));
  page.deviceValid_ = true;
  changed(page);
  return previous;
}

PreviousImage PageStore::writtenOnBacking(PageState& page) {
  constexpr const char* kName = "written on backing";
  if (!page.hostMapped()) return refusedImage(kName, "the page maps no host block", page);
  if (page.host_.kind == HostImageKind::Swap && page.host_.slot == page.backing_) {
    changed(page);
    return PreviousImage(HostImage::of(HostImageKind::None)); // the block already was the image
  }
  return swapImage(page, HostImage::inSwap(page.backing_), kName);
}

Status PageStore::wroteBack(PageState& page, std::byte* slot) {
  constexpr const char* kName = "wrote back";
  if (slot == nullptr) return refuse(kName, "no swap slot given", page);
  if (!page.dirty()) return refuse(kName, "the page is not dirty", page);
  HostImage image = HostImage::inSwap(slot);
  if (const char* why = inconsistency(image, page.backed_, page.backing_, page.deviceValid_))
    return refuse(kName, why, page);
  page.host_ = std::move(image);
  changed(page);
  return Status::Success;
}

PreviousImage PageStore::imageReplaced(PageState& page, HostImage image) {
  constexpr const char* kName = "image replaced";
  if (page.pinned()) return refusedImage(kName, "in-flight work uses the page", page);
  if (image.kind == HostImageKind::None) return refusedImage(kName, "the new image holds nothing", page);
  if (const char* why = inconsistency(image, page.backed_, page.backing_, false)) return refusedImage(kName, why, page);
  PreviousImage previous(std::exchange(page.host_, std::move(image)));
  page.deviceValid_ = false;
  changed(page);
  return previous;
}

Status PageStore::writtenOnHost(PageState& page) {
  constexpr const char* kName = "written on host";
  if (page.pinned()) return refuse(kName, "in-flight work uses the page", page);
  if (page.host_.kind != HostImageKind::Swap) return refuse(kName, "the page has no swap image to write", page);
  if (const char* why = inconsistency(page.host_, page.backed_, page.backing_, false)) return refuse(kName, why, page);
  page.deviceValid_ = false;
  changed(page);
  return Status::Success;
}

PreviousImage PageStore::imageCopied(PageState& page, std::byte* slot) {
  constexpr const char* kName = "image copied";
  if (slot == nullptr) return refusedImage(kName, "no swap slot given", page);
  if (page.host_.kind == HostImageKind::None) return refusedImage(kName, "the page has no host image to copy", page);
  return swapImage(page, HostImage::inSwap(slot), kName);
}

PreviousImage PageStore::materialized(PageState& page) {
  constexpr const char* kName = "materialized";
  if (!page.pending()) return refusedImage(kName, "the page is not pending", page);
  return swapImage(page, HostImage::inSwap(page.backing_), kName);
}

PreviousImage PageStore::swapImage(PageState& page, HostImage image, const char* transition) {
  if (const char* why = inconsistency(image, page.backed_, page.backing_, page.deviceValid_))
    return refusedImage(transition, why, page);
  PreviousImage previous(std::exchange(page.host_, std::move(image)));
  changed(page);
  return previous;
}

PreviousImage PageStore::imageDropped(PageState& page) {
  constexpr const char* kName = "image dropped";
  if (page.host_.kind == HostImageKind::None) return refusedImage(kName, "the page has no host image", page);
  const HostImage none = HostImage::of(HostImageKind::None);
  if (const char* why = inconsistency(none, page.backed_, page.backing_, page.deviceValid_))
    return refusedImage(kName, why, page);
  PreviousImage previous(std::exchange(page.host_, none));
  changed(page);
  return previous;
}

Status PageStore::pin(PageState& page) {
  if (page.pins_ == std::numeric_limits<std::uint32_t>::max())
    return refuse("pin", "the pin count would overflow", page);
  ++page.pins_;
  return Status::Success;
}

Status PageStore::unpin(PageState& page) {
  if (page.pins_ == 0) return refuse("unpin", "the page is not pinned", page);
  --page.pins_;
  return Status::Success;
}

void PageStore::used(PageState& page, std::uint64_t now) {
  if (page.lastUse_ != now) page.previousUse_ = page.lastUse_;
  page.lastUse_ = now;
  ++page.useCount_;
}

} // namespace mqx
