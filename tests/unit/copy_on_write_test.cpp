// Copy-on-write of lazy copy sources (docs/architecture.md decision 5): the
// device must see the data as it was at the time of the copy, whatever the
// application does to its buffer afterwards.
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "hook/host_memory_hooks.hpp"
#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

constexpr std::size_t KiB = 1024;

TEST_F(ManagerTest, WriteAfterLazyCopyKeepsTheOldData) {
  auto expected = pattern(256 * KiB);
  auto* buffer = static_cast<std::uint8_t*>(std::malloc(expected.size()));
  std::memcpy(buffer, expected.data(), expected.size());
  DevicePtr region = allocate(expected.size());
  ASSERT_EQ(manager_->copyHostToDevice(region, buffer, expected.size(), 0, true), Status::Success);
  // Inside the buffer, away from its partial first and last host pages
  // (those are never protected): faults once, then proceeds.
  std::memset(buffer + 128 * KiB, 0xFF, 5000);
  EXPECT_EQ(buffer[128 * KiB], 0xFF);
  EXPECT_EQ(read(region, expected.size()), expected);
  auto stats = manager_->statistics();
  EXPECT_EQ(stats.cowFaults, 1U);
  EXPECT_GT(stats.cowBytesSaved, 0U);
  std::free(buffer);
}

TEST_F(ManagerTest, WriteAfterTheDataWasLoadedCopiesNothing) {
  auto expected = pattern(256 * KiB);
  auto* buffer = static_cast<std::uint8_t*>(std::malloc(expected.size()));
  std::memcpy(buffer, expected.data(), expected.size());
  DevicePtr region = allocate(expected.size());
  DevicePtr out = allocate(expected.size());
  ASSERT_EQ(manager_->copyHostToDevice(region, buffer, expected.size(), 0, true), Status::Success);
  EXPECT_EQ(manager_->advise(region, Access::Input), Status::Success);
  EXPECT_EQ(manager_->advise(out, Access::Output), Status::Success);
  ASSERT_EQ(transform(region, out, expected.size(), 0), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  std::memset(buffer, 0, expected.size());
  EXPECT_EQ(manager_->statistics().cowBytesSaved,
            0U); // the device copy became the only copy
  EXPECT_EQ(read(region, expected.size()), expected);
  std::free(buffer);
}

TEST_F(ManagerTest, FreeAndMunmapOfASourceKeepThePendingData) {
  auto expected = pattern(320 * KiB);
  auto* heap = static_cast<std::uint8_t*>(std::malloc(expected.size()));
  std::memcpy(heap, expected.data(), expected.size());
  auto* mapped = static_cast<std::uint8_t*>(
      ::mmap(nullptr, expected.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mapped, MAP_FAILED);
  std::memcpy(mapped, expected.data(), expected.size());
  DevicePtr first = allocate(expected.size());
  DevicePtr second = allocate(expected.size());
  ASSERT_EQ(manager_->copyHostToDevice(first, heap, expected.size(), 0, true), Status::Success);
  ASSERT_EQ(manager_->copyHostToDevice(second, mapped, expected.size(), 0, true), Status::Success);
  // Where the source lay, taken before the free (the test checks what was
  // saved of its partial host pages).
  const auto start = reinterpret_cast<std::uintptr_t>(heap);
  std::free(heap);
  ASSERT_EQ(::munmap(mapped, expected.size()), 0);
  // Reuse the freed memory so that stale data would show.
  std::vector<std::uint8_t> noise(expected.size(), 0x5A);
  EXPECT_EQ(read(first, expected.size()), expected);
  EXPECT_EQ(read(second, expected.size()), expected);
  // The mmap'ed source is page-aligned and was protected whole. Of the
  // malloc'ed one (where malloc put it is up to malloc), only the bytes on
  // the partial host pages at either end were copied at copy time; every
  // device page stayed a copy-on-write image until the free saved it.
  const std::size_t end = start + expected.size();
  const std::size_t edgeBytes = (start % 4096 != 0 ? 4096 - start % 4096 : 0) + end % 4096;
  EXPECT_EQ(manager_->statistics().cowBytesSaved, 2 * expected.size()) << manager_->statistics().toJson();
  EXPECT_EQ(manager_->statistics().bytesCopiedOnHost, edgeBytes) << manager_->statistics().toJson();
}

// A source that starts and ends inside host pages (as malloc'ed buffers do):
// the bytes on those partial pages cannot be protected, so they are saved at
// copy time (SourceEdges) and nothing else moves until the data is used.
// Whatever the application then writes, there or anywhere in the buffer,
// every path that reads the page (a launch's load, a read from the host
// image, a device-to-device copy, the save on a write fault) sees the data
// of the copy.
TEST_F(ManagerTest, UnalignedSourceSavesOnlyItsEdgeBytes) {
  const std::size_t bytes = 3 * 64 * KiB + 1000; // four device pages, the last partial
  const std::size_t head = 16;                   // into its first host page, as malloc does
  auto* mapped = static_cast<std::uint8_t*>(
      ::mmap(nullptr, bytes + 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mapped, MAP_FAILED);
  std::uint8_t* source = mapped + head;
  const auto expected = pattern(bytes);
  std::memcpy(source, expected.data(), bytes);
  const std::size_t end = reinterpret_cast<std::uintptr_t>(source + bytes) % 4096;
  const std::size_t edgeBytes = (4096 - head) + end;

  DevicePtr loaded = allocate(bytes);
  DevicePtr kept = allocate(bytes);
  DevicePtr cloned = allocate(bytes);
  DevicePtr out = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(loaded, source, bytes, 0, true), Status::Success);
  ASSERT_EQ(manager_->copyHostToDevice(kept, source, bytes, 0, true), Status::Success);
  auto stats = manager_->statistics();
  EXPECT_EQ(stats.bytesToDevice, 0U) << "lazy: nothing transferred at copy time";
  EXPECT_EQ(stats.bytesCopiedOnHost, 2 * edgeBytes) << stats.toJson();
  ASSERT_EQ(manager_->copyDeviceToDevice(cloned, kept, bytes, 0, true), Status::Success);

  // The edges are not protected: these writes take no fault, and must not
  // reach the device copies. The middle write faults once.
  std::memset(mapped, 0xEE, 4096);                    // the head's host page, malloc header included
  std::memset(source + bytes - end, 0xDD, end + 100); // the tail's host page
  std::memset(source + 100 * KiB, 0xCC, 10);          // protected: a fault saves the page
  EXPECT_EQ(manager_->statistics().cowFaults, 1U);

  EXPECT_EQ(manager_->advise(loaded, Access::Input), Status::Success);
  EXPECT_EQ(manager_->advise(out, Access::Output), Status::Success);
  ASSERT_EQ(transform(loaded, out, bytes, 5), Status::Success); // loads head, middle and tail parts
  std::vector<std::uint8_t> transformed(bytes);
  transformReference(expected.data(), transformed.data(), bytes, 5);
  EXPECT_EQ(read(out, bytes), transformed);
  EXPECT_EQ(read(loaded, bytes), expected);
  EXPECT_EQ(read(kept, bytes), expected); // from the host images: edges, saved page and buffer
  // The buffer goes away: every page still referring to it is saved whole.
  ASSERT_EQ(::munmap(mapped, bytes + 2 * 4096), 0);
  EXPECT_EQ(read(kept, bytes), expected);
  EXPECT_EQ(read(cloned, bytes), expected);
}

TEST_F(ManagerTest, ReadOnlySourcesStayReadOnlyAndWritableOnesComeBack) {
  const std::size_t bytes = 128 * KiB;
  auto* readOnly =
      static_cast<std::uint8_t*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(readOnly, 3, bytes);
  ASSERT_EQ(::mprotect(readOnly, bytes, PROT_READ), 0);
  auto* writable = static_cast<std::uint8_t*>(std::malloc(bytes));
  std::memset(writable, 4, bytes);
  DevicePtr a = allocate(bytes);
  DevicePtr b = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(a, readOnly, bytes, 0, true), Status::Success);
  ASSERT_EQ(manager_->copyHostToDevice(b, writable, bytes, 0, true), Status::Success);
  ASSERT_EQ(manager_->free(a), Status::Success);
  ASSERT_EQ(manager_->free(b), Status::Success);
  // b's source is writable again without a fault; a's is still read-only.
  writable[0] = 9;
  EXPECT_EQ(manager_->statistics().cowFaults, 0U);
  EXPECT_EQ(::mprotect(readOnly, bytes, PROT_READ | PROT_WRITE), 0);
  readOnly[0] = 1;
  ::munmap(readOnly, bytes);
  std::free(writable);
}

TEST_F(ManagerTest, RecopiedBuffersStayProtectedEvenIfRemappedBehindOurBack) {
  const std::size_t bytes = 256 * KiB;
  auto* buffer =
      static_cast<std::uint8_t*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(buffer, 1, bytes);
  DevicePtr region = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(region, buffer, bytes, 0, true), Status::Success);
  ASSERT_EQ(transform(region, region, bytes, 0), Status::Success); // writes: the source is no longer needed
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  // The source lingers write-protected; writing it costs one fault and no copy.
  std::memset(buffer, 2, bytes);
  EXPECT_EQ(manager_->statistics().cowBytesSaved, 0U);
  // Copy again, then replace the mapping without telling anyone (a raw
  // munmap system call) and map fresh memory at the same address.
  ASSERT_EQ(manager_->copyHostToDevice(region, buffer, bytes, 0, true), Status::Success);
  ASSERT_EQ(transform(region, region, bytes, 0), Status::Success);
  EXPECT_EQ(manager_->synchronizeAll(), Status::Success);
  ASSERT_EQ(::syscall(SYS_munmap, buffer, bytes), 0);
  auto* again = static_cast<std::uint8_t*>(
      ::mmap(buffer, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
  ASSERT_EQ(again, buffer);
  std::memset(again, 3, bytes);
  ASSERT_EQ(manager_->copyHostToDevice(region, again, bytes, 0, true), Status::Success);
  std::memset(again, 4, bytes); // must fault: the device must see 3s
  std::vector<std::uint8_t> expected(bytes, 3);
  EXPECT_EQ(read(region, bytes), expected);
  ::munmap(again, bytes);
}

// Unregistering waits for a hook call that read the manager before: a
// thread preempted between reading the pointer and using it would read a
// destroyed manager (a sim stream's worker hung in the destroyed tracker's
// map so, BadInputTest.AllocationLargerThanTheDeviceWithoutHostMappingIsRefused).
TEST_F(ManagerTest, UnregisteringWaitsForHookCallsThatHoldTheManager) {
  // start() registered the manager.
  auto held = std::make_unique<hook::ManagerUse>();
  ASSERT_EQ(held->manager(), manager_.get());
  std::atomic<bool> unregistered{false};
  std::thread owner([&] {
    hook::registerHostMemoryManager(nullptr);
    unregistered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(unregistered) << "returned while a hook call still held the manager";
  held.reset();
  owner.join();
  EXPECT_TRUE(unregistered);
  EXPECT_EQ(hook::ManagerUse().manager(), nullptr) << "a later call sees none";
  // Frees on many threads while the manager comes and goes: each sees it
  // whole or not at all.
  std::atomic<bool> stop{false};
  std::vector<std::thread> freeing;
  for (int thread = 0; thread < 4; ++thread)
    freeing.emplace_back([&] {
      while (!stop) {
        void* volatile block = std::malloc(64);
        std::free(block);
      }
    });
  for (int round = 0; round < 200; ++round) {
    hook::registerHostMemoryManager(manager_.get());
    hook::registerHostMemoryManager(nullptr);
  }
  stop = true;
  for (std::thread& thread : freeing)
    thread.join();
}

void exitWith42(int) { _exit(42); }

// In a fresh process: a program's own SIGSEGV handler, installed before mqx,
// still receives the faults that are not mqx's; without one, the program
// dies of SIGSEGV as it would without mqx.
void faultOnForeignPage(bool ownHandler) {
  if (ownHandler) {
    struct sigaction action {};
    action.sa_handler = exitWith42;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, nullptr);
  }
  Config config = smallConfig();
  device::SimBackend backend(embedded::simBackendOptions(config));
  MemoryManager manager(embedded::managerOptions(config), backend);
  hook::registerHostMemoryManager(&manager);
  std::vector<std::uint8_t> source(64 * 1024, 1); // something protected, so the handler looks
  DevicePtr region = 0;
  EXPECT_EQ(manager.allocate(source.size(), &region), Status::Success);
  EXPECT_EQ(manager.copyHostToDevice(region, source.data(), source.size(), 0, true), Status::Success);
  auto* page =
      static_cast<volatile std::uint8_t*>(::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  page[0] = 1;
  _exit(0);
}

TEST(CopyOnWriteDeathTest, ForeignFaultsReachThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(faultOnForeignPage(true), ::testing::ExitedWithCode(42), "");
  EXPECT_EXIT(faultOnForeignPage(false), ::testing::KilledBySignal(SIGSEGV), "");
}

} // namespace
} // namespace mqx::test
