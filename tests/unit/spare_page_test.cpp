// The spare page (policy.spare_pages, ResidencyManager::refillSpare): once the
// budget is full, a page's worth of it is kept; a page that must be backed
// takes it at once, and the victim that refills it is written back while
// that page loads, on the other copy engine. The bytes stay right with it on
// and off, another process asking for memory is given the spare first, none
// is kept while another process holds any of a shared budget, and pages
// larger than a sixteenth of the budget keep none.
#include <gtest/gtest.h>

#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t kPage = 64 * KiB; // a sixteenth of the 1 MiB device

class SparePageTest : public ManagerTest {
protected:
  static Config spareConfig(unsigned sparePages, std::size_t pageSize = kPage) {
    Config config = smallConfig();
    config.pageSize = pageSize;
    config.pointersInParameters = true;
    config.sparePages = sparePages;
    return config;
  }
  // `count` regions of `bytes`, each written by a kernel (dirty on the
  // device), through a device that holds fewer: evictions with loads.
  void cycleDirtyRegions(int count, std::size_t bytes) {
    for (int i = 0; i < count; ++i) {
      const DevicePtr address = allocate(bytes);
      std::vector<std::uint8_t> data = pattern(bytes, static_cast<std::uint8_t>(i + 1));
      ASSERT_EQ(manager_->copyHostToDevice(address, data.data(), bytes, 0, true), Status::Success);
      regions_.emplace_back(address, std::move(data));
    }
    // Two rounds over all of them: every region is loaded back at least once.
    for (int round = 0; round < 2; ++round)
      for (auto& [address, data] : regions_) {
        const auto seed = static_cast<std::uint8_t>(round * 7 + 3);
        ASSERT_EQ(transform(address, address, data.size(), seed), Status::Success);
        transformReference(data.data(), data.data(), data.size(), seed);
      }
    ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  }
  void expectEveryRegionIntact() {
    for (const auto& [address, bytes] : regions_)
      EXPECT_EQ(read(address, bytes.size()), bytes) << "region at " << address;
  }

  // KernelsThroughPointerTables*: twenty regions made dirty on the device;
  // then, each step, a launch on a new region (zeros: nothing to load, so
  // nothing else to wait for) that evicts the oldest resident region, and
  // right after it every region transformed in place through a table on
  // another stream, oldest first: those not resident, then the one just
  // evicted. The table kernels are submitted as graphs are: mqx sees neither
  // their parameters nor the table, and cannot know what they reach.
  void tableKernelsAfterEvictions(Config config) {
    config.pointersInParameters = false; // references not known: launches may reach every page
    config.simCopyBandwidthGBps = 0.05;  // 64 KiB in 1.3 ms
    config.simRealtime = true;
    config.replacement = ReplacementKind::Lru;
    config.writeBackAhead = 0; // every victim dirty: each eviction is a write-back
    start(config);
    const StreamHandle launches = backend_->createStream();
    const StreamHandle tables = backend_->createStream();
    const DevicePtr table = allocate(sizeof(IndirectTable));
    for (int i = 0; i < 20; ++i) {
      const DevicePtr address = allocate(kPage);
      std::vector<std::uint8_t> data = pattern(kPage, static_cast<std::uint8_t>(i + 1));
      ASSERT_EQ(manager_->copyHostToDevice(address, data.data(), kPage, launches, true), Status::Success);
      ASSERT_EQ(transform(address, address, kPage, 3, launches), Status::Success); // dirty on the device
      transformReference(data.data(), data.data(), kPage, 3);
      regions_.emplace_back(address, std::move(data));
    }
    // The table kernels run on another stream: the program orders them after
    // these transforms, as it must on a GPU.
    ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
    const std::size_t dirtyRegions = regions_.size();
    for (int step = 0; step < 24; ++step) {
      const DevicePtr fresh = allocate(kPage);
      ASSERT_EQ(transform(fresh, fresh, kPage, 5, launches), Status::Success);
      std::vector<std::uint8_t> zeros(kPage, 0);
      transformReference(zeros.data(), zeros.data(), kPage, 5);
      regions_.emplace_back(fresh, std::move(zeros));
      for (std::size_t k = 0; k < dirtyRegions; ++k) {
        auto& [other, bytes] = regions_[k];
        const IndirectTable entry{reinterpret_cast<std::uint8_t*>(other), reinterpret_cast<std::uint8_t*>(other),
                                  bytes.size(), static_cast<std::uint64_t>(k + step)};
        ASSERT_EQ(manager_->copyHostToDevice(table, &entry, sizeof entry, tables, true), Status::Success);
        void* tablePointer = reinterpret_cast<void*>(table);
        void* params[] = {&tablePointer};
        device::KernelLaunch launch;
        launch.function = kernels_->indirectTransform;
        launch.params = params;
        launch.stream = tables;
        ASSERT_EQ(manager_->launchUnknown(tables, [&] { return backend_->launch(launch); }), Status::Success);
        transformReference(bytes.data(), bytes.data(), bytes.size(), static_cast<std::uint8_t>(k + step));
      }
    }
    ASSERT_EQ(manager_->synchronizeAll(), Status::Success);
  }

  std::vector<std::pair<DevicePtr, std::vector<std::uint8_t>>> regions_;
};

TEST_F(SparePageTest, VictimsAreWrittenBackBesideTheLoadsAndNothingIsLost) {
  start(spareConfig(1));
  cycleDirtyRegions(24, kPage); // 1.5 MiB of one-page regions on the 1 MiB device
  const Statistics statistics = manager_->statistics();
  EXPECT_GT(statistics.evictions, 0U);
  // Every eviction after the first one that found the budget full refills
  // the spare while a page loads (one-page regions: each load took it).
  EXPECT_GT(statistics.evictionsBesideLoads, 0U);
  EXPECT_LE(statistics.evictionsBesideLoads, statistics.evictions);
  expectEveryRegionIntact();
}

TEST_F(SparePageTest, OffEveryVictimIsWrittenBackBeforeItsLoads) {
  start(spareConfig(0));
  cycleDirtyRegions(24, kPage);
  const Statistics statistics = manager_->statistics();
  EXPECT_GT(statistics.evictions, 0U);
  EXPECT_EQ(statistics.evictionsBesideLoads, 0U);
  expectEveryRegionIntact();
}

TEST_F(SparePageTest, ThePageThatTakesTheSpareNeedsNoEvictionFirst) {
  // The same work with and without a spare evicts about as often: the spare
  // moves each eviction beside a load, it does not add one per load (one
  // more at most, to fill it once). Under LRU every reference of this cycle
  // misses whatever the capacity, so the count is the spare's own; under a
  // policy that keeps part of a cycle (reuse) the two pages
  // the spare and the staging memory hold back would add misses of their own.
  Config without = spareConfig(0), with = spareConfig(1);
  without.replacement = with.replacement = ReplacementKind::Lru;
  start(without);
  cycleDirtyRegions(24, kPage);
  const std::uint64_t evictionsWithout = manager_->statistics().evictions;
  regions_.clear();
  start(with);
  cycleDirtyRegions(24, kPage);
  const std::uint64_t evictionsWith = manager_->statistics().evictions;
  EXPECT_LE(evictionsWith, evictionsWithout + evictionsWithout / 16 + 1) << "without " << evictionsWithout;
  expectEveryRegionIntact();
}

TEST_F(SparePageTest, AnotherProcessAskingForMemoryIsGivenTheSpareFirst) {
  start(spareConfig(1));
  cycleDirtyRegions(24, kPage);
  const Statistics before = manager_->statistics();
  ASSERT_GT(before.evictionsBesideLoads, 0U) << "no spare was kept";
  // The spare is budget held and unused: handing it over moves nothing. The
  // staging memory of write-backs (policy.staged_write_back), a page kept
  // with the spare, goes with it.
  EXPECT_EQ(manager_->evictForOtherProcess(kPage, std::chrono::milliseconds(100)), 2 * kPage);
  EXPECT_EQ(manager_->statistics().evictions, before.evictions);
  expectEveryRegionIntact();
}

// Two spare pages on a 2 MiB device (2 x 64 KiB is its sixteenth), regions
// of two pages, page victims: an operation that misses both backs both from
// the spare, and the victims that refill them are written back beside their
// loads. With one spare page the second page waited for an eviction first.
// Nothing is written ahead, so that every victim has something to write back.
TEST_F(SparePageTest, TwoSparePagesServeAnOperationThatMissesTwo) {
  const auto run = [&](unsigned sparePages) {
    Config config = spareConfig(sparePages);
    config.simCapacity = 2048 * KiB;
    config.writeBackAhead = 0;
    config.evictionGranularity = EvictionGranularity::Page; // a victim frees one page, not its region's two
    regions_.clear();
    start(config);
    cycleDirtyRegions(40, 2 * kPage);
    expectEveryRegionIntact();
    return manager_->statistics();
  };
  const Statistics one = run(1);
  const Statistics two = run(2);
  EXPECT_GT(two.evictionsBesideLoads, two.evictions / 2) << two.toJson();
  EXPECT_GT(two.evictionsBesideLoads, one.evictionsBesideLoads) << one.toJson() << "\n" << two.toJson();
}

// Two spare pages where two are more than a sixteenth of the budget (the
// 1 MiB device): none is kept.
TEST_F(SparePageTest, SparePagesMoreThanASixteenthOfTheBudgetAreNotKept) {
  start(spareConfig(2));
  cycleDirtyRegions(24, kPage);
  EXPECT_EQ(manager_->statistics().evictionsBesideLoads, 0U);
  expectEveryRegionIntact();
}

TEST_F(SparePageTest, PagesLargerThanASixteenthOfTheBudgetKeepNoSpare) {
  start(spareConfig(1, 128 * KiB)); // an eighth of the device
  cycleDirtyRegions(12, 128 * KiB);
  const Statistics statistics = manager_->statistics();
  EXPECT_GT(statistics.evictions, 0U);
  EXPECT_EQ(statistics.evictionsBesideLoads, 0U);
  expectEveryRegionIntact();
}

// A spare page is one of the manager's pages, whatever the miss: regions
// smaller than a sixteenth of the budget, with pages larger than it, keep
// none. Sized by the miss, the spare was kept, and each refill evicted ahead
// of need (47% more evictions on the simulated SSB queries).
TEST_F(SparePageTest, SmallMissesKeepNoSpareWherePagesAreLargerThanASixteenth) {
  start(spareConfig(1, 128 * KiB)); // pages an eighth of the device
  cycleDirtyRegions(80, 16 * KiB);  // 1.25 MiB of regions of a sixty-fourth
  const Statistics statistics = manager_->statistics();
  EXPECT_GT(statistics.evictions, 0U);
  EXPECT_EQ(statistics.evictionsBesideLoads, 0U);
  expectEveryRegionIntact();
}

// A budget shared with one other process, which holds `elsewhere` bytes of
// it (the node's SharedDeviceBudget counts each process's in its record).
class BudgetBesideAnotherProcess final : public DeviceBudget {
public:
  explicit BudgetBesideAnotherProcess(std::size_t limit) : limit_(limit) {}
  bool tryAcquire(std::size_t bytes) override {
    if (own_ + elsewhere + bytes > limit_) return false;
    own_ += bytes;
    return true;
  }
  void release(std::size_t bytes) override { own_ -= bytes; }
  std::size_t used() const override { return own_ + elsewhere; }
  std::size_t limit() const override { return limit_; }
  std::size_t heldElsewhere() const override { return elsewhere; }

  std::size_t elsewhere = 0;

private:
  const std::size_t limit_;
  std::size_t own_ = 0;
};

// The spare on a shared budget: kept while the process is alone on it,
// given back when the other process asks, and not kept again while the
// other holds any budget; kept again once it has left.
TEST_F(SparePageTest, KeptOnlyWhileNoOtherProcessHoldsBudget) {
  auto budget = std::make_shared<BudgetBesideAnotherProcess>(1024 * KiB);
  start(spareConfig(1), budget);
  cycleDirtyRegions(24, kPage);
  const Statistics alone = manager_->statistics();
  ASSERT_GT(alone.evictionsBesideLoads, 0U) << "alone on the budget, no spare was kept";

  // The other process asks for a page and takes it: the spare and the
  // staging memory kept with it, nothing moved.
  EXPECT_EQ(manager_->evictForOtherProcess(kPage, std::chrono::milliseconds(100)), 2 * kPage);
  EXPECT_EQ(manager_->statistics().evictions, alone.evictions);
  budget->elsewhere = kPage;
  regions_.clear();
  cycleDirtyRegions(24, kPage);
  const Statistics beside = manager_->statistics();
  EXPECT_GT(beside.evictions, alone.evictions);
  EXPECT_EQ(beside.evictionsBesideLoads, alone.evictionsBesideLoads) << "a spare was kept beside the other";

  budget->elsewhere = 0; // it left
  regions_.clear();
  cycleDirtyRegions(24, kPage);
  EXPECT_GT(manager_->statistics().evictionsBesideLoads, beside.evictionsBesideLoads) << "no spare once alone again";
  expectEveryRegionIntact();
}

// Another process that took budget without asking (free budget, while this
// one held a spare): the spare goes back at its next refill, not kept idle.
TEST_F(SparePageTest, GivenBackWhenAnotherProcessTookBudgetWithoutAsking) {
  auto budget = std::make_shared<BudgetBesideAnotherProcess>(1024 * KiB);
  start(spareConfig(1), budget);
  cycleDirtyRegions(24, kPage);
  const Statistics alone = manager_->statistics();
  ASSERT_GT(alone.evictionsBesideLoads, 0U);
  budget->elsewhere = 1; // a byte is enough: it holds some of the budget
  regions_.clear();
  cycleDirtyRegions(24, kPage);
  // One refill at most ran beside loads before the first one found the other.
  EXPECT_LE(manager_->statistics().evictionsBesideLoads, alone.evictionsBesideLoads + 1);
  expectEveryRegionIntact();
}

// policy.staged_write_back: with the spare, a dirty victim's bytes are
// copied into staging memory on the device, the victim's host block is
// mapped under it at once and the copy to that block runs from the staging
// memory. On a device whose copies take their time (64 KiB in 1.3 ms),
// nothing is lost, and with the option off no write-back is staged.
TEST_F(SparePageTest, StagedWriteBacksLoseNothing) {
  for (const bool staged : {true, false}) {
    Config config = spareConfig(1);
    config.simCopyBandwidthGBps = 0.05;
    config.simRealtime = true;
    config.stagedWriteBack = staged;
    regions_.clear();
    start(config);
    cycleDirtyRegions(24, kPage);
    const Statistics statistics = manager_->statistics();
    if (staged) {
      EXPECT_GT(statistics.stagedWriteBacks, 0U) << statistics.toJson();
      EXPECT_LE(statistics.stagedWriteBacks, statistics.evictions);
    } else {
      EXPECT_EQ(statistics.stagedWriteBacks, 0U);
    }
    expectEveryRegionIntact();
  }
}

// The host reads a page whose staged write-back is still on its way into
// its host block, which is the page's image by then: the read waits for it
// (MemoryManager::copyDeviceToHost, ResidencyManager::waitUnpinned). The
// regions are used round robin and evicted least recently used first, and
// after each launch every region is read back oldest first: the regions not
// resident, read from their images without waiting for anything, then the
// ones that launch's refill just evicted, while their bytes travel. The
// reads run on a stream of their own, which nothing orders after the
// launches: only mqx makes them wait.
TEST_F(SparePageTest, HostReadsRightAfterAStagedWriteBackSeeItsBytes) {
  Config config = spareConfig(1);
  config.simCopyBandwidthGBps = 0.05;
  config.simRealtime = true;
  config.replacement = ReplacementKind::Lru;
  config.writeBackAhead = 0; // every victim dirty: each eviction is a write-back
  start(config);
  const StreamHandle reader = backend_->createStream();
  for (int i = 0; i < 20; ++i) {
    const DevicePtr address = allocate(kPage);
    std::vector<std::uint8_t> data = pattern(kPage, static_cast<std::uint8_t>(i + 1));
    ASSERT_EQ(manager_->copyHostToDevice(address, data.data(), kPage, 0, true), Status::Success);
    regions_.emplace_back(address, std::move(data));
  }
  for (int round = 0; round < 2; ++round)
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      auto& [address, data] = regions_[i];
      const auto seed = static_cast<std::uint8_t>(round * 5 + 1);
      ASSERT_EQ(transform(address, address, data.size(), seed), Status::Success);
      transformReference(data.data(), data.data(), data.size(), seed);
      for (std::size_t k = 1; k <= regions_.size(); ++k) {
        const auto& [other, bytes] = regions_[(i + k) % regions_.size()];
        std::vector<std::uint8_t> out(bytes.size());
        ASSERT_EQ(manager_->copyDeviceToHost(out.data(), other, out.size(), reader, true), Status::Success);
        ASSERT_EQ(out, bytes) << "region " << (i + k) % regions_.size() << ", round " << round;
      }
    }
  EXPECT_GT(manager_->statistics().stagedWriteBacks, 0U) << manager_->statistics().toJson();
}

// A kernel whose operands are named only by a table in device memory may
// reach every page: it reads and writes a page whose staged write-back is
// still on its way into the page's host block through that block. All device
// work enqueued after a staged write-back runs after it (afterStagedWriteBack
// orders the host-to-device stream, and every stream after that one). Each
// step's eviction is a staged write-back here, and the table kernels reach
// the page it evicted while its bytes travel.
TEST_F(SparePageTest, KernelsThroughPointerTablesRunAfterAStagedWriteBack) {
  tableKernelsAfterEvictions(spareConfig(1));
  EXPECT_GT(manager_->statistics().stagedWriteBacks, 0U) << manager_->statistics().toJson();
  expectEveryRegionIntact();
}

// The same without the spare (nor staging): each table kernel rewrites the
// table the one before it reads, with a copy on their stream. Done lazily
// on a page in device memory, the copy writes the page's image, loaded
// before the next launch on the transfer stream: until that load was
// ordered after the launches in flight (PageMapper::imageRewritten,
// orderLoadsAfterReaders) it could land before the kernel that still had to
// read the old table, and whole regions ended one transform short and
// their neighbours one over.
TEST_F(SparePageTest, KernelsThroughPointerTablesSeeTheTableWrittenBeforeThem) {
  Config config = spareConfig(0);
  config.stagedWriteBack = false;
  tableKernelsAfterEvictions(config);
  EXPECT_EQ(manager_->statistics().stagedWriteBacks, 0U);
  expectEveryRegionIntact();
}

} // namespace
} // namespace mqx::test
