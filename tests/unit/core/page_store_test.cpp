// PageStore: the transitions of a page's state (docs/architecture.md, "The
// life of a page"), and the refusal of any that would lose the page's bytes,
// unmap a page in use or leave its state inconsistent.
#include "core/page_store.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

namespace mqx {
namespace {

// What a refused transition must leave as it was.
struct Snapshot {
  HostImageKind kind;
  const std::byte* slot;
  bool backed;
  const std::byte* backing;
  bool deviceValid;
  std::uint32_t pins;
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

Snapshot snapshot(const PageState& page) {
  return {page.host().kind, page.host().slot, page.backed(), page.backing(), page.deviceValid(), page.pins()};
}

class PageStoreTest : public ::testing::Test {
protected:
  // The image a transition let go of, taken out as the page mapper takes it
  // (the test owns what it held).
  static HostImage taken(PreviousImage previous) {
    EXPECT_EQ(previous.status(), Status::Success);
    return previous.take();
  }
  // Why a transition that lets go of an image was refused; it hands back
  // nothing.
  static Status refusal(PreviousImage previous) {
    EXPECT_EQ(previous.image().kind, HostImageKind::None);
    return previous.status();
  }

  std::byte* slot(std::size_t i) { return slots_[i].data(); }

  // A page whose only copy is on the device.
  PageState dirtyPage() {
    PageState page;
    EXPECT_EQ(PageStore::mappedToDevice(page), Status::Success);
    EXPECT_EQ(taken(PageStore::writtenOnDevice(page)).kind, HostImageKind::Zero);
    return page;
  }
  // A page evicted to `block`, which it maps and which holds its bytes.
  PageState pageOnBlock(std::byte* block) {
    PageState page = dirtyPage();
    EXPECT_EQ(PageStore::wroteBack(page, block), Status::Success);
    EXPECT_EQ(PageStore::unbacked(page), Status::Success);
    EXPECT_EQ(PageStore::mappedToBacking(page, block), Status::Success);
    return page;
  }
  // A page never written that maps `block`: pending (its zeros are not there).
  PageState pendingPage(std::byte* block) {
    PageState page;
    EXPECT_EQ(PageStore::mappedToBacking(page, block), Status::Success);
    return page;
  }

  std::array<std::array<std::byte, 16>, 3> slots_{};
};

TEST_F(PageStoreTest, ANewPageReadsAsZerosAndMapsNothing) {
  PageState page;
  EXPECT_EQ(page.host().kind, HostImageKind::Zero);
  EXPECT_FALSE(page.backed());
  EXPECT_FALSE(page.hostMapped());
  EXPECT_FALSE(page.deviceValid());
  EXPECT_FALSE(page.pinned());
  EXPECT_EQ(PageStore::inconsistency(page), nullptr);
}

TEST_F(PageStoreTest, ALoadMakesTheDeviceCopyValidBesideTheImage) {
  PageState page;
  ASSERT_EQ(PageStore::mappedToDevice(page), Status::Success);
  EXPECT_TRUE(page.backed());
  EXPECT_FALSE(page.deviceValid());
  ASSERT_EQ(PageStore::loaded(page), Status::Success);
  EXPECT_TRUE(page.deviceValid());
  EXPECT_EQ(page.host().kind, HostImageKind::Zero); // clean: both copies equal
  EXPECT_FALSE(page.dirty());
}

TEST_F(PageStoreTest, AWriteOnTheDeviceDropsTheHostImage) {
  PageState page;
  ASSERT_EQ(PageStore::mappedToDevice(page), Status::Success);
  EXPECT_EQ(taken(PageStore::imageReplaced(page, HostImage::filled(4, 0xABCD))).kind, HostImageKind::Zero);
  const HostImage fill = taken(PageStore::writtenOnDevice(page));
  EXPECT_EQ(fill.kind, HostImageKind::Fill);
  EXPECT_EQ(fill.pattern, 0xABCDU);
  EXPECT_TRUE(page.dirty());
}

TEST_F(PageStoreTest, EvictionWritesBackUnbacksAndMapsTheSlot) {
  PageState page = dirtyPage();
  ASSERT_EQ(PageStore::wroteBack(page, slot(0)), Status::Success);
  EXPECT_FALSE(page.dirty());
  EXPECT_TRUE(page.deviceValid()); // still valid until the memory goes
  ASSERT_EQ(PageStore::unbacked(page), Status::Success);
  EXPECT_FALSE(page.backed());
  EXPECT_FALSE(page.deviceValid());
  ASSERT_EQ(PageStore::mappedToBacking(page, slot(0)), Status::Success);
  EXPECT_TRUE(page.hostMapped());
  EXPECT_FALSE(page.pending()); // the block holds its bytes
  // Back on the device: the block stays as its swap image.
  ASSERT_EQ(PageStore::mappedToDevice(page), Status::Success);
  EXPECT_TRUE(page.backed());
  EXPECT_FALSE(page.hostMapped());
  EXPECT_EQ(page.host().kind, HostImageKind::Swap);
  EXPECT_EQ(page.host().slot, slot(0));
}

TEST_F(PageStoreTest, APendingPageGetsItsBytesInItsBlock) {
  PageState page = pendingPage(slot(0));
  EXPECT_TRUE(page.pending());
  EXPECT_EQ(taken(PageStore::materialized(page)).kind, HostImageKind::Zero);
  EXPECT_FALSE(page.pending());
  EXPECT_EQ(page.host().slot, slot(0));
}

TEST_F(PageStoreTest, AWriteThroughTheBlockMakesTheBlockTheImage) {
  PageState pending = pendingPage(slot(0));
  EXPECT_EQ(taken(PageStore::writtenOnBacking(pending)).kind, HostImageKind::Zero); // for the caller to release
  EXPECT_EQ(pending.host().kind, HostImageKind::Swap);
  EXPECT_EQ(pending.host().slot, slot(0));

  PageState onBlock = pageOnBlock(slot(1));
  // The block already was the image: nothing to release.
  EXPECT_EQ(taken(PageStore::writtenOnBacking(onBlock)).kind, HostImageKind::None);
  EXPECT_EQ(onBlock.host().slot, slot(1));
}

TEST_F(PageStoreTest, ALazyPartialWriteMakesTheDeviceCopyStale) {
  PageState page;
  ASSERT_EQ(PageStore::mappedToDevice(page), Status::Success);
  ASSERT_EQ(PageStore::loaded(page), Status::Success);
  EXPECT_EQ(taken(PageStore::imageCopied(page, slot(0))).kind, HostImageKind::Zero);
  EXPECT_TRUE(page.deviceValid()); // a copy of the image: the device copy is as valid as before
  ASSERT_EQ(PageStore::writtenOnHost(page), Status::Success);
  EXPECT_FALSE(page.deviceValid());
  EXPECT_EQ(page.host().slot, slot(0));
}

TEST_F(PageStoreTest, DroppingTheImageKeepsTheValidDeviceCopy) {
  PageState page;
  ASSERT_EQ(PageStore::mappedToDevice(page), Status::Success);
  EXPECT_EQ(taken(PageStore::imageReplaced(page, HostImage::inBuffer(slot(2)))).kind, HostImageKind::Zero);
  ASSERT_EQ(PageStore::loaded(page), Status::Success);
  EXPECT_EQ(taken(PageStore::imageDropped(page)).kind, HostImageKind::CowSource);
  EXPECT_TRUE(page.dirty());
}

TEST_F(PageStoreTest, PinsCountAndUsesAreRecorded) {
  PageState page = dirtyPage();
  ASSERT_EQ(PageStore::pin(page), Status::Success);
  ASSERT_EQ(PageStore::pin(page), Status::Success);
  EXPECT_EQ(page.pins(), 2U);
  ASSERT_EQ(PageStore::unpin(page), Status::Success);
  EXPECT_TRUE(page.pinned());
  ASSERT_EQ(PageStore::unpin(page), Status::Success);
  EXPECT_FALSE(page.pinned());
  PageStore::used(page, 7);
  PageStore::used(page, 9);
  EXPECT_EQ(page.lastUse(), 9U);
  EXPECT_EQ(page.useCount(), 2U);
}

TEST_F(PageStoreTest, ReleaseHandsBackWhatThePageHeld) {
  PageState page = pageOnBlock(slot(0));
  PageState previous;
  ASSERT_EQ(PageStore::released(page, previous), Status::Success);
  EXPECT_EQ(previous.backing(), slot(0));
  EXPECT_EQ(previous.host().slot, slot(0));
  EXPECT_FALSE(page.hostMapped());
  EXPECT_FALSE(page.backed());
  EXPECT_EQ(page.host().kind, HostImageKind::None);
}

// --- Refusals: each leaves the page exactly as it was. ---

TEST_F(PageStoreTest, TheOnlyCopyIsNeverUnbacked) {
  PageState page = dirtyPage();
  const Snapshot before = snapshot(page);
  EXPECT_EQ(PageStore::unbacked(page), Status::Unknown);
  EXPECT_EQ(snapshot(page), before);
}

TEST_F(PageStoreTest, APinnedPageIsNeitherUnbackedNorRemappedNorReleased) {
  PageState page = dirtyPage();
  ASSERT_EQ(PageStore::wroteBack(page, slot(0)), Status::Success);
  ASSERT_EQ(PageStore::pin(page), Status::Success);
  const Snapshot before = snapshot(page);
  EXPECT_EQ(PageStore::unbacked(page), Status::Unknown);
  PageState previous;
  EXPECT_EQ(PageStore::released(page, previous), Status::Unknown);
  EXPECT_EQ(snapshot(page), before);

  PageState onBlock = pageOnBlock(slot(1));
  ASSERT_EQ(PageStore::pin(onBlock), Status::Success); // work running from the host block
  const Snapshot mapped = snapshot(onBlock);
  EXPECT_EQ(PageStore::mappedToDevice(onBlock), Status::Unknown);
  EXPECT_EQ(snapshot(onBlock), mapped);
}

TEST_F(PageStoreTest, APinnedPageGetsNoHostSideWrite) {
  PageState page = dirtyPage();
  ASSERT_EQ(PageStore::wroteBack(page, slot(0)), Status::Success);
  ASSERT_EQ(PageStore::pin(page), Status::Success);
  const Snapshot before = snapshot(page);
  EXPECT_EQ(refusal(PageStore::imageReplaced(page, HostImage::of(HostImageKind::Zero))), Status::Unknown);
  EXPECT_EQ(PageStore::writtenOnHost(page), Status::Unknown);
  EXPECT_EQ(snapshot(page), before);
}

TEST_F(PageStoreTest, NoTransitionLeavesThePageWithoutACopy) {
  PageState page = dirtyPage();
  const Snapshot dirty = snapshot(page);
  EXPECT_EQ(refusal(PageStore::imageReplaced(page, HostImage::of(HostImageKind::None))), Status::Unknown);
  EXPECT_EQ(refusal(PageStore::imageDropped(page)), Status::Unknown); // it has no image to drop
  EXPECT_EQ(snapshot(page), dirty);

  PageState unloaded;
  ASSERT_EQ(PageStore::mappedToDevice(unloaded), Status::Success);
  const Snapshot stale = snapshot(unloaded);
  EXPECT_EQ(refusal(PageStore::imageDropped(unloaded)), Status::Unknown); // the device copy is not valid
  EXPECT_EQ(snapshot(unloaded), stale);
}

TEST_F(PageStoreTest, DeviceTransitionsNeedDeviceMemory) {
  PageState page;
  const Snapshot before = snapshot(page);
  EXPECT_EQ(PageStore::loaded(page), Status::Unknown);
  EXPECT_EQ(refusal(PageStore::writtenOnDevice(page)), Status::Unknown);
  EXPECT_EQ(PageStore::unbacked(page), Status::Unknown);
  EXPECT_EQ(snapshot(page), before);

  PageState backed = dirtyPage();
  const Snapshot dirty = snapshot(backed);
  EXPECT_EQ(PageStore::mappedToDevice(backed), Status::Unknown); // already backed
  EXPECT_EQ(PageStore::loaded(backed), Status::Unknown);         // already valid
  EXPECT_EQ(snapshot(backed), dirty);
}

TEST_F(PageStoreTest, AWriteBackNeedsADirtyPageAndASlot) {
  PageState clean;
  ASSERT_EQ(PageStore::mappedToDevice(clean), Status::Success);
  ASSERT_EQ(PageStore::loaded(clean), Status::Success);
  const Snapshot before = snapshot(clean);
  EXPECT_EQ(PageStore::wroteBack(clean, slot(0)), Status::Unknown);
  EXPECT_EQ(snapshot(clean), before);

  PageState dirty = dirtyPage();
  const Snapshot dirtyBefore = snapshot(dirty);
  EXPECT_EQ(PageStore::wroteBack(dirty, nullptr), Status::Unknown);
  EXPECT_EQ(snapshot(dirty), dirtyBefore);
}

TEST_F(PageStoreTest, APageMapsOneThingAndItsSwapImageIsItsBlock) {
  PageState backed = dirtyPage();
  const Snapshot before = snapshot(backed);
  EXPECT_EQ(PageStore::mappedToBacking(backed, slot(0)), Status::Unknown); // device memory is mapped
  EXPECT_EQ(snapshot(backed), before);

  PageState onBlock = pageOnBlock(slot(0));
  const Snapshot mapped = snapshot(onBlock);
  EXPECT_EQ(PageStore::mappedToBacking(onBlock, slot(1)), Status::Unknown); // already maps a block
  // A swap image elsewhere than the block it maps.
  EXPECT_EQ(refusal(PageStore::imageReplaced(onBlock, HostImage::inSwap(slot(1)))), Status::Unknown);
  EXPECT_EQ(refusal(PageStore::imageCopied(onBlock, slot(1))), Status::Unknown);
  EXPECT_EQ(snapshot(onBlock), mapped);

  PageState swapped = dirtyPage();
  ASSERT_EQ(PageStore::wroteBack(swapped, slot(0)), Status::Success);
  ASSERT_EQ(PageStore::unbacked(swapped), Status::Success);
  const Snapshot unmapped = snapshot(swapped);
  EXPECT_EQ(PageStore::mappedToBacking(swapped, slot(1)), Status::Unknown); // its image is in slot 0
  EXPECT_EQ(snapshot(swapped), unmapped);
}

TEST_F(PageStoreTest, HostBlockTransitionsNeedABlockOrAPendingPage) {
  PageState page;
  const Snapshot before = snapshot(page);
  EXPECT_EQ(refusal(PageStore::writtenOnBacking(page)), Status::Unknown);
  EXPECT_EQ(refusal(PageStore::materialized(page)), Status::Unknown);
  EXPECT_EQ(PageStore::writtenOnHost(page), Status::Unknown); // no swap image to write
  EXPECT_EQ(snapshot(page), before);

  PageState onBlock = pageOnBlock(slot(0));
  const Snapshot mapped = snapshot(onBlock);
  EXPECT_EQ(refusal(PageStore::materialized(onBlock)), Status::Unknown); // not pending
  EXPECT_EQ(snapshot(onBlock), mapped);
}

TEST_F(PageStoreTest, AnUnpinWithoutAPinIsRefused) {
  PageState page;
  EXPECT_EQ(PageStore::unpin(page), Status::Unknown);
  EXPECT_EQ(page.pins(), 0U);
}

TEST_F(PageStoreTest, InconsistencyNamesEachBrokenInvariant) {
  const HostImage none = HostImage::of(HostImageKind::None);
  const HostImage zero = HostImage::of(HostImageKind::Zero);
  EXPECT_NE(PageStore::inconsistency(none, true, nullptr, false), nullptr); // no copy
  EXPECT_NE(PageStore::inconsistency(zero, false, nullptr, true), nullptr); // valid copy without memory
  EXPECT_NE(PageStore::inconsistency(zero, true, slot(0), false), nullptr); // two mappings
  EXPECT_NE(PageStore::inconsistency(HostImage::inSwap(slot(1)), false, slot(0), false), nullptr); // image apart
  EXPECT_EQ(PageStore::inconsistency(HostImage::inSwap(slot(0)), false, slot(0), false), nullptr);
  EXPECT_EQ(PageStore::inconsistency(zero, false, slot(0), false), nullptr); // pending
  EXPECT_EQ(PageStore::inconsistency(none, true, nullptr, true), nullptr);   // dirty
}

} // namespace
} // namespace mqx

namespace mqx {
namespace {

TEST(PreviousImageTest, MovesItsImageToOneOwner) {
  std::array<std::byte, 16> slot{};
  PreviousImage first(HostImage::inSwap(slot.data()));
  EXPECT_TRUE(first.accepted());
  PreviousImage second = std::move(first);
  EXPECT_EQ(first.image().kind, HostImageKind::None); // NOLINT(bugprone-use-after-move): moved from holds nothing
  EXPECT_EQ(second.image().slot, slot.data());
  const HostImage image = second.take();
  EXPECT_EQ(image.kind, HostImageKind::Swap);
  EXPECT_EQ(second.image().kind, HostImageKind::None);
}

TEST(PreviousImageTest, ARefusalCarriesItsStatusAndNoImage) {
  const PreviousImage refused = PreviousImage::refused(Status::Unknown);
  EXPECT_FALSE(refused.accepted());
  EXPECT_EQ(refused.status(), Status::Unknown);
  EXPECT_EQ(refused.image().kind, HostImageKind::None);
  static_assert(!std::is_copy_constructible_v<PreviousImage>);
  static_assert(std::is_nothrow_move_constructible_v<PreviousImage>);
}

} // namespace
} // namespace mqx
