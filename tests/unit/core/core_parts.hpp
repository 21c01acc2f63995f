// The core's parts built on their own over the simulated device, without a
// MemoryManager: a budget, the swap buffer and its slots, the copy-on-write
// tracker, a directory of regions and the page mapper. Pages are small (one
// 64 KiB granule) so that a test sees every page.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "core/cow_tracker.hpp"
#include "core/device_budget.hpp"
#include "core/page_mapper.hpp"
#include "core/region_directory.hpp"
#include "core/statistics.hpp"
#include "core/swap_buffer.hpp"
#include "core/swap_slots.hpp"
#include "device/sim/sim_backend.hpp"

namespace mqx::test {

constexpr std::size_t kPartPage = 64 * 1024;

inline device::SimBackendOptions partsBackendOptions(std::size_t capacityPages) {
  device::SimBackendOptions options;
  options.capacity = capacityPages * kPartPage;
  options.granularity = kPartPage;
  options.copyBandwidthGBps = 1000;
  return options;
}

struct CoreParts {
  // `budgetPages` of device budget on a device of `capacityPages` (a budget
  // larger than the device: the device is fuller than the budget says).
  explicit CoreParts(std::size_t budgetPages, std::size_t capacityPages = 0, bool pinnedSwap = true)
      : backend(partsBackendOptions(capacityPages != 0 ? capacityPages : budgetPages)), budget(budgetPages * kPartPage),
        swap(backend, 64 * kPartPage, pinnedSwap), slots(backend, swap),
        mapper(backend, budget, slots, cow, statistics) {}

  ~CoreParts() {
    std::vector<RegionId> ids;
    directory.forEach([&](Region& region) { ids.push_back(region.id); });
    for (RegionId id : ids)
      free(*directory.byId(id));
  }

  // A region of `pages` pages at a reserved range, mapping nothing yet.
  Region& addRegion(std::size_t pages) {
    auto region = std::make_unique<Region>();
    region->id = nextRegion++;
    region->size = pages * kPartPage;
    region->reservedSize = region->size;
    region->pageSize = kPartPage;
    region->pages.resize(pages);
    EXPECT_EQ(backend.reserve(region->reservedSize, &region->base), Status::Success);
    return directory.add(std::move(region));
  }
  // A region as MemoryManager allocates it: every page mapped at once.
  Region& mappedRegion(std::size_t pages) {
    Region& region = addRegion(pages);
    EXPECT_EQ(mapper.mapNewRegion(region), Status::Success);
    return region;
  }
  void free(Region& region) {
    slots.reclaim(true);
    EXPECT_EQ(mapper.releaseRegion(region), Status::Success);
    EXPECT_EQ(backend.release(region.base, region.reservedSize), Status::Success);
    directory.remove(region.id);
  }

  // The page's bytes as a kernel would read them through its mapping (sim:
  // device addresses are host addresses).
  static const std::uint8_t* mapped(const Region& region, std::uint32_t page) {
    return reinterpret_cast<const std::uint8_t*>(region.pageAddress(page));
  }

  device::SimBackend backend;
  LocalDeviceBudget budget;
  SwapBuffer swap;
  SwapSlots slots;
  CowTracker cow;
  Statistics statistics;
  RegionDirectory directory;
  PageMapper mapper;
  RegionId nextRegion = 1;
};

// Host memory of whole host pages of its own (mmap): what copy-on-write
// protects is then the test's alone, never malloc's.
class HostPages {
public:
  explicit HostPages(std::size_t bytes) : bytes_(bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(memory, MAP_FAILED);
    data_ = static_cast<std::byte*>(memory);
  }
  ~HostPages() { ::munmap(data_, bytes_); }
  HostPages(const HostPages&) = delete;
  HostPages& operator=(const HostPages&) = delete;
  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }

private:
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Device work that runs until the test opens the gate: a fence enqueued
// after it stays unreached until then.
class Gate {
public:
  explicit Gate(device::SimBackend& backend) : backend_(backend), opened_(promise_.get_future().share()) {
    kernel_ =
        backend_.registerKernel([opened = opened_](const device::SimKernelContext&, void**) { opened.wait(); }, {});
  }
  ~Gate() { open(); }
  // Enqueues the waiting kernel on `stream` and a fence after it.
  device::Fence closeOn(StreamHandle stream) {
    device::KernelLaunch launch;
    launch.function = kernel_;
    launch.stream = stream;
    EXPECT_EQ(backend_.launch(launch), Status::Success);
    device::Fence fence;
    EXPECT_EQ(backend_.enqueueFence(stream, &fence), Status::Success);
    return fence;
  }
  void open() {
    if (!isOpen_) promise_.set_value();
    isOpen_ = true;
  }

private:
  device::SimBackend& backend_;
  std::promise<void> promise_;
  std::shared_future<void> opened_;
  FunctionHandle kernel_ = 0;
  bool isOpen_ = false;
};

} // namespace mqx::test
