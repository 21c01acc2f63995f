// Pure parts of the hook layer and the CUDA backend, on the CPU: the
// decomposition of 2D/3D copies into linear runs, the cuGetProcAddress
// version rules, batched copies issued one by one, and the staging ring's
// multi-threaded memcpy.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "device/cuda/parallel_copier.hpp"
#include "hook/copy_batch.hpp"
#include "hook/copy_shape.hpp"
#include "hook/proc_address_rules.hpp"

namespace mqx::hook {
namespace {

using CopyRun = std::tuple<std::uintptr_t, std::uintptr_t, std::size_t>;

std::vector<CopyRun> runsOf(const CopyShape& shape) {
  std::vector<CopyRun> runs;
  shape.forEachRun([&](std::uintptr_t source, std::uintptr_t destination, std::size_t bytes) {
    runs.emplace_back(source, destination, bytes);
    return 0;
  });
  return runs;
}

TEST(CopyShape, ContiguousSidesBecomeOneRun) {
  CopyShape shape;
  shape.source = {1000, 0, 0, 0, 64, 0};
  shape.destination = {5000, 0, 0, 0, 0, 0}; // pitch 0: the width
  shape.width = 64;
  shape.height = 10;
  EXPECT_EQ(runsOf(shape), (std::vector<CopyRun>{{1000, 5000, 640}}));
}

TEST(CopyShape, PitchedRowsBecomeOneRunEach) {
  CopyShape shape;
  shape.source = {1000, 8, 2, 0, 100, 0};
  shape.destination = {5000, 0, 0, 0, 64, 0};
  shape.width = 64;
  shape.height = 3;
  EXPECT_EQ(runsOf(shape), (std::vector<CopyRun>{{1208, 5000, 64}, {1308, 5064, 64}, {1408, 5128, 64}}));
  EXPECT_EQ(shape.extent(shape.source), 264U);
  EXPECT_EQ(shape.extent(shape.destination), 192U);
}

TEST(CopyShape, SlicesMergeWhenRowsAreContiguousButSlicesAreNot) {
  CopyShape shape;
  shape.source = {0, 0, 0, 1, 16, 8}; // slices of 8 rows, copy starts at slice 1
  shape.destination = {10000, 0, 0, 0, 16, 4};
  shape.width = 16;
  shape.height = 4;
  shape.depth = 2;
  EXPECT_EQ(runsOf(shape), (std::vector<CopyRun>{{128, 10000, 64}, {256, 10064, 64}}));
}

TEST(CopyShape, StopsAtTheFirstFailure) {
  CopyShape shape;
  shape.source = {0, 0, 0, 0, 32, 0};
  shape.destination = {0, 0, 0, 0, 16, 0};
  shape.width = 16;
  shape.height = 5;
  int calls = 0;
  int result = shape.forEachRun([&](std::uintptr_t, std::uintptr_t, std::size_t) { return ++calls == 2 ? 7 : 0; });
  EXPECT_EQ(result, 7);
  EXPECT_EQ(calls, 2);
}

TEST(CopyShape, EmptyCopiesDoNothing) {
  CopyShape shape;
  shape.width = 0;
  EXPECT_TRUE(runsOf(shape).empty());
  EXPECT_EQ(shape.extent(shape.source), 0U);
}

TEST(ProcAddressRules, VersionsPickTheAbi) {
  EXPECT_EQ(exportedNameFor("cuMemAlloc", 13000, false), "cuMemAlloc_v2");
  EXPECT_EQ(exportedNameFor("cuMemAlloc", 3010, false), ""); // the 32-bit ABI is not hooked
  EXPECT_EQ(exportedNameFor("cuCtxSynchronize", 12090, false), "cuCtxSynchronize");
  EXPECT_EQ(exportedNameFor("cuCtxSynchronize", 13000, false), "cuCtxSynchronize_v2");
  EXPECT_EQ(exportedNameFor("cuGetProcAddress", 11080, false), "cuGetProcAddress");
  EXPECT_EQ(exportedNameFor("cuGetProcAddress", 12000, false), "cuGetProcAddress_v2");
  EXPECT_EQ(exportedNameFor("cuDeviceGetName", 13000, false), "");
  EXPECT_EQ(exportedNameFor("cuMemcpyBatchAsync", 12080, false), "cuMemcpyBatchAsync");
  EXPECT_EQ(exportedNameFor("cuMemcpyBatchAsync", 13000, true), "cuMemcpyBatchAsync_v2_ptsz");
  EXPECT_EQ(exportedNameFor("cuMemAllocFromPoolAsync", 13000, true), "cuMemAllocFromPoolAsync_ptsz");
}

TEST(CopyBatch, EveryCopyInOrderAndNoFailureIndex) {
  const std::uint64_t destinations[] = {10, 20, 30};
  const std::uint64_t sources[] = {1, 2, 3};
  const std::size_t sizes[] = {100, 200, 300};
  std::vector<CopyRun> copies;
  std::size_t failIndex = 7;
  const int result = forEachCopyOfBatch(destinations, sources, sizes, 3, &failIndex, 0, 1,
                                        [&](std::uint64_t destination, std::uint64_t source, std::size_t bytes) {
                                          copies.emplace_back(source, destination, bytes);
                                          return 0;
                                        });
  EXPECT_EQ(result, 0);
  EXPECT_EQ(failIndex, SIZE_MAX);
  EXPECT_EQ(copies, (std::vector<CopyRun>{{1, 10, 100}, {2, 20, 200}, {3, 30, 300}}));
}

TEST(CopyBatch, StopsAtTheFirstFailureAndNamesIt) {
  const std::uint64_t addresses[] = {1, 2, 3, 4};
  const std::size_t sizes[] = {1, 1, 1, 1};
  int calls = 0;
  std::size_t failIndex = 0;
  const int result = forEachCopyOfBatch(addresses, addresses, sizes, 4, &failIndex, 0, 1,
                                        [&](std::uint64_t, std::uint64_t source, std::size_t) {
                                          ++calls;
                                          return source == 3 ? 700 : 0;
                                        });
  EXPECT_EQ(result, 700);
  EXPECT_EQ(failIndex, 2u);
  EXPECT_EQ(calls, 3);
  // CUDA 13's ABI has no failure index; a missing array is the invalid value.
  const auto copyNothing = [](std::uint64_t, std::uint64_t, std::size_t) { return 0; };
  const int missing = forEachCopyOfBatch<int, std::uint64_t>(nullptr, addresses, sizes, 1, nullptr, 0, 1, copyNothing);
  EXPECT_EQ(missing, 1);
}

TEST(ProcAddressRules, PerThreadFlagPicksThePerThreadVariant) {
  EXPECT_EQ(exportedNameFor("cuMemcpyHtoD", 13000, true), "cuMemcpyHtoD_v2_ptds");
  EXPECT_EQ(exportedNameFor("cuMemcpyHtoDAsync", 13000, true), "cuMemcpyHtoDAsync_v2_ptsz");
  EXPECT_EQ(exportedNameFor("cuLaunchKernel", 13000, true), "cuLaunchKernel_ptsz");
  EXPECT_EQ(exportedNameFor("cuMemAlloc", 13000, true), "cuMemAlloc_v2");    // no stream: no variant
  EXPECT_EQ(exportedNameFor("cuMemcpyHtoD", 6050, true), "cuMemcpyHtoD_v2"); // before CUDA 7
}

TEST(ParallelCopier, CopiesEverySizeExactly) {
  using Stores = device::cuda::ParallelCopier::Stores;
  device::cuda::ParallelCopier copier(3);
  std::vector<unsigned char> source(21 << 20);
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<unsigned char>(i * 131 + i / 4096);
  // Streaming stores have an aligned body and plain head and tail: every
  // destination misalignment and odd sizes around 16 and 64 bytes.
  for (Stores stores : {Stores::Cached, Stores::Streaming}) {
    for (std::size_t shift : {std::size_t{0}, std::size_t{1}, std::size_t{9}, std::size_t{15}}) {
      for (std::size_t bytes :
           {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{63}, std::size_t{65}, std::size_t{4095},
            std::size_t{1} << 20, (std::size_t{5} << 20) + 7, source.size() - shift}) {
        std::vector<unsigned char> destination(bytes + 2 + shift, 0xEE);
        copier.copy(destination.data() + 1 + shift, source.data() + shift, bytes, stores);
        EXPECT_TRUE(std::equal(source.begin() + static_cast<std::ptrdiff_t>(shift),
                               source.begin() + static_cast<std::ptrdiff_t>(shift + bytes),
                               destination.begin() + 1 + static_cast<std::ptrdiff_t>(shift)))
            << bytes << " bytes, shift " << shift << ", streaming " << (stores == Stores::Streaming);
        EXPECT_EQ(destination[shift], 0xEE) << "wrote before the start";
        EXPECT_EQ(destination.back(), 0xEE) << "wrote past the end for " << bytes;
      }
    }
  }
}

TEST(ParallelCopier, ManyCallsInARowAndNoWorkers) {
  device::cuda::ParallelCopier copier(2);
  device::cuda::ParallelCopier alone(0);
  std::vector<int> source(1 << 20);
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<int>(i);
  std::vector<int> destination(source.size());
  for (int round = 0; round < 50; ++round) {
    std::fill(destination.begin(), destination.end(), -1);
    (round % 2 == 0 ? copier : alone).copy(destination.data(), source.data(), source.size() * sizeof(int));
    ASSERT_EQ(destination, source) << round;
  }
}

} // namespace
} // namespace mqx::hook
