// PageStore: the one writer of PageState (docs/architecture.md, "The life of
// a page"). Every change of a page's host image, device copy, mappings and
// pins is one of the named transitions below, each saying what happened to
// the page. A transition checks its precondition and that the page stays
// consistent afterwards; a transition that would break either is refused:
// it logs what it was asked, leaves the page as it was and returns
// Status::Unknown (a bug in mqx, as the other invariant failures of the core).
//
// The invariants of a live page:
//   - some copy holds its bytes: deviceValid || host.kind != None;
//   - a valid device copy lies in device memory: deviceValid => backed;
//   - it maps one thing: not both backed and a host block (backing);
//   - a swap image of a page on its host block is that block:
//     backing && host.kind == Swap => host.slot == backing.
// A pinned page (in-flight work uses it) keeps what it maps: it is not
// unbacked, remapped or released, and the host side does not replace or
// write its content (imageReplaced, writtenOnHost).
//
// Transitions change state only. Their side effects (mapping, transfers,
// releasing slots and copy-on-write protection) belong to PageMapper
// (core/page_mapper.hpp), which makes the mapping transitions itself: the
// transitions that let go of a host image return it as a PreviousImage,
// which the caller hands back to the mapper.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/status.hpp"
#include "core/page_state.hpp"

namespace mqx {

// What a transition that lets go of a page's host image returns: the image,
// whose swap slot or copy-on-write protection is given back only when it is
// handed back (PageMapper::handBack), or the transition's refusal (nothing
// changed). Move-only, so that one owner hands it back; one destroyed while
// it still holds an image is a leak, a bug in mqx, and says so in the log.
class [[nodiscard]] PreviousImage {
public:
  static PreviousImage refused(Status why) {
    PreviousImage refusal(HostImage::of(HostImageKind::None));
    refusal.status_ = why;
    return refusal;
  }
  explicit PreviousImage(HostImage image) : image_(std::move(image)) {}
  PreviousImage(PreviousImage&& other) noexcept : status_(other.status_), image_(other.take()) {}
  PreviousImage& operator=(PreviousImage&& other) noexcept;
  PreviousImage(const PreviousImage&) = delete;
  PreviousImage& operator=(const PreviousImage&) = delete;
  ~PreviousImage();

  // Success, or why the transition was refused.
  Status status() const { return status_; }
  bool accepted() const { return ok(status_); }
  const HostImage& image() const { return image_; }
  // Takes the image out, for whoever gives back what it holds.
  HostImage take() { return std::exchange(image_, HostImage::of(HostImageKind::None)); }

private:
  Status status_ = Status::Success;
  HostImage image_;
};

class PageStore {
public:
  // --- Mappings (paper §4, docs/architecture.md decision 2) ---

  // Device memory is now mapped under the page, in place of its host block
  // if it had one (which no in-flight work may reach). Its device copy is not
  // valid yet.
  [[nodiscard]] static Status mappedToDevice(PageState& page);
  // The page's device memory went back to the budget (an eviction, or a
  // yielding operation that gives back what it backed): its host image holds
  // its bytes, and no in-flight work uses it.
  [[nodiscard]] static Status unbacked(PageState& page);
  // The host block `slot` is now mapped under the page, which has neither
  // device memory nor a block. The page is pending unless its swap image is
  // that block.
  [[nodiscard]] static Status mappedToBacking(PageState& page, std::byte* slot);
  // The region is freed: the page maps nothing and holds nothing any more.
  // `previous` receives what it held (its image, mappings), for the caller to
  // release. The page must not be pinned. A released page is dead: the
  // invariants no longer apply to it.
  [[nodiscard]] static Status released(PageState& page, PageState& previous);

  // --- Device copy ---

  // A load into the page's device memory is enqueued (from its host image):
  // the device copy is valid in stream order.
  [[nodiscard]] static Status loaded(PageState& page);
  // Device work wrote the page in its device memory: the device copy is the
  // only one. Returns the host image it dropped (kind None if it had none).
  static PreviousImage writtenOnDevice(PageState& page);
  // Device work wrote the page through its host block, which now holds its
  // bytes (its swap image). Returns the image that the block replaced (kind
  // None when the block already was the image).
  static PreviousImage writtenOnBacking(PageState& page);
  // The device copy was written to the swap slot `slot` (a write-back): the
  // dirty page is clean, its image the slot.
  [[nodiscard]] static Status wroteBack(PageState& page, std::byte* slot);

  // --- Host image ---

  // The page's content is now `image` alone (a lazy copy or memset of the
  // whole page): the device copy is stale. Returns the image it replaced.
  // The page must not be pinned.
  static PreviousImage imageReplaced(PageState& page, HostImage image);
  // The host side wrote part of the page's swap image (a lazy copy or memset
  // of part of the page): the device copy is stale. The page must not be
  // pinned.
  [[nodiscard]] static Status writtenOnHost(PageState& page);
  // The image's bytes were copied into the swap slot `slot`, which is now
  // the image; the device copy stays as it was. Returns the image it
  // replaced.
  static PreviousImage imageCopied(PageState& page, std::byte* slot);
  // A pending page's image was written into its host block, which is now its
  // image. Returns the image it replaced.
  static PreviousImage materialized(PageState& page);
  // The host image goes and the device copy, which is valid, stays as the
  // only one (the application is about to change a copy-on-write source
  // whose bytes the device already holds). Returns the image.
  static PreviousImage imageDropped(PageState& page);

  // --- Use ---

  // In-flight device work uses the page (until a fence is reached).
  [[nodiscard]] static Status pin(PageState& page);
  // Work that pinned the page completed.
  [[nodiscard]] static Status unpin(PageState& page);
  // A launch used the page at logical time `now` (replacement policy inputs).
  static void used(PageState& page, std::uint64_t now);

  // Why a page with these fields would be inconsistent (the invariants
  // above), or null when it would not.
  static const char* inconsistency(const HostImage& host, bool backed, const std::byte* backing, bool deviceValid);
  static const char* inconsistency(const PageState& page) {
    return inconsistency(page.host_, page.backed_, page.backing_, page.deviceValid_);
  }

private:
  // The page's host image becomes `image` (its device state unchanged),
  // returning the old one; refused as `transition` when the page would be
  // inconsistent.
  static PreviousImage swapImage(PageState& page, HostImage image, const char* transition);
  // The end of every transition that changed the page (all but pins and
  // uses): counts it in the page's generation, which a write-back issued
  // ahead checks (PageState::generation). One place, so that a new
  // transition cannot forget it.
  static void changed(PageState& page) { ++page.generation_; }
};

} // namespace mqx
