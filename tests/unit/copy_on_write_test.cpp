// Copy-on-write of lazy copy sources (ARCHITECTURE.md decision 5): the
// device must see the data as it was at the time of the copy, whatever the
// application does to its buffer afterwards.
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

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
  manager_->advise(region, Access::Input);
  manager_->advise(out, Access::Output);
  ASSERT_EQ(transform(region, out, expected.size(), 0), Status::Success);
  manager_->synchronizeAll();
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
  std::free(heap);
  ASSERT_EQ(::munmap(mapped, expected.size()), 0);
  // Reuse the freed memory so that stale data would show.
  std::vector<std::uint8_t> noise(expected.size(), 0x5A);
  EXPECT_EQ(read(first, expected.size()), expected);
  EXPECT_EQ(read(second, expected.size()), expected);
  // The mmap'ed source is page-aligned and was protected whole; a partial
  // host page at either end of the malloc'ed one (where malloc put it is
  // up to malloc) sends the device page over it to the swap buffer at once.
  const auto start = reinterpret_cast<std::uintptr_t>(heap);
  const std::size_t edges = (start % 4096 != 0 ? 1 : 0) + ((start + expected.size()) % 4096 != 0 ? 1 : 0);
  EXPECT_EQ(manager_->statistics().cowBytesSaved, 2 * expected.size() - edges * 64 * KiB)
      << manager_->statistics().toJson();
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
  auto* buffer = static_cast<std::uint8_t*>(
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(buffer, 1, bytes);
  DevicePtr region = allocate(bytes);
  ASSERT_EQ(manager_->copyHostToDevice(region, buffer, bytes, 0, true), Status::Success);
  ASSERT_EQ(transform(region, region, bytes, 0), Status::Success); // writes: the source is no longer needed
  manager_->synchronizeAll();
  // The source lingers write-protected; writing it costs one fault and no copy.
  std::memset(buffer, 2, bytes);
  EXPECT_EQ(manager_->statistics().cowBytesSaved, 0U);
  // Copy again, then replace the mapping without telling anyone (a raw
  // munmap system call) and map fresh memory at the same address.
  ASSERT_EQ(manager_->copyHostToDevice(region, buffer, bytes, 0, true), Status::Success);
  ASSERT_EQ(transform(region, region, bytes, 0), Status::Success);
  manager_->synchronizeAll();
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
  device::SimBackend backend(config);
  MemoryManager manager(config, backend);
  hook::registerHostMemoryManager(&manager);
  std::vector<std::uint8_t> source(64 * 1024, 1); // something protected, so the handler looks
  DevicePtr region = 0;
  manager.allocate(source.size(), &region);
  manager.copyHostToDevice(region, source.data(), source.size(), 0, true);
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
