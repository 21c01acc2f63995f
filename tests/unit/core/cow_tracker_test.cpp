// CowTracker on its own: which host pages are write-protected, for which
// records, and when their protection goes (docs/architecture.md decision 5).
// Protection is read back from /proc/self/maps, as the kernel sees it.
#include "core/cow_tracker.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <random>

#include "core_parts.hpp"

namespace mqx::test {
namespace {

const std::uintptr_t kHostPage = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));

// The protection of the host page at `address`, from /proc/self/maps.
int protectionOf(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return -1;
  char line[512];
  int protection = -1;
  while (protection < 0 && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &begin, &end, perms) != 3 || at < begin || at >= end) continue;
    protection = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0);
  }
  std::fclose(maps);
  return protection;
}

bool writable(const std::byte* address) { return (protectionOf(address) & PROT_WRITE) != 0; }

class CowTrackerTest : public ::testing::Test {
protected:
  std::byte* page(std::size_t index) const { return buffer_.data() + index * kHostPage; }

  HostPages buffer_{8 * kHostPage};
  CowTracker cow_;
};

TEST_F(CowTrackerTest, ProtectsWholeHostPagesUntilTheirLastRecordGoes) {
  const PageKey first{1, 0};
  const PageKey second{2, 0};
  // Bytes 100 into page 1 up to 100 into page 3: pages 1 to 3 are protected.
  ASSERT_TRUE(cow_.protect(page(1) + 100, 2 * kHostPage, first));
  EXPECT_TRUE(cow_.anyProtected());
  EXPECT_TRUE(writable(page(0)));
  EXPECT_FALSE(writable(page(1)));
  EXPECT_FALSE(writable(page(3)));
  EXPECT_TRUE(writable(page(4)));
  ASSERT_TRUE(cow_.protect(page(3), kHostPage, second));

  const auto onPage3 = cow_.onHostPage(reinterpret_cast<std::uintptr_t>(page(3)) + 7);
  EXPECT_EQ(onPage3.size(), 2U);
  EXPECT_EQ(cow_.overlapping(reinterpret_cast<std::uintptr_t>(page(0)), kHostPage).size(), 0U);
  EXPECT_TRUE(cow_.overlapsProtected(reinterpret_cast<std::uintptr_t>(page(0)), kHostPage + 1));
  EXPECT_FALSE(cow_.overlapsProtected(reinterpret_cast<std::uintptr_t>(page(4)), kHostPage));

  cow_.unprotect(page(1) + 100, 2 * kHostPage, first);
  EXPECT_FALSE(writable(page(3))); // the second record still reads it
  EXPECT_EQ(cow_.overlapping(reinterpret_cast<std::uintptr_t>(page(1)), 3 * kHostPage).size(), 1U);
  // Pages 1 and 2 linger: protected without a record, until written.
  EXPECT_FALSE(writable(page(1)));
  EXPECT_TRUE(cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(1)) + 5)); // a write fault there
  EXPECT_TRUE(writable(page(1)));
  EXPECT_FALSE(cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(3)))); // not lingering: a record reads it
  cow_.unprotect(page(3), kHostPage, second);
  EXPECT_TRUE(cow_.empty());
  cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(0)), 8 * kHostPage);
  EXPECT_FALSE(cow_.anyProtected());
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_TRUE(writable(page(i))) << "page " << i;
}

TEST_F(CowTrackerTest, ALingeringPageProtectedAgainStaysProtected) {
  ASSERT_TRUE(cow_.protect(page(2), kHostPage, PageKey{1, 0}));
  cow_.unprotect(page(2), kHostPage, PageKey{1, 0});
  ASSERT_TRUE(cow_.protect(page(2), kHostPage, PageKey{1, 1})); // the same buffer copied again
  EXPECT_FALSE(writable(page(2)));
  EXPECT_EQ(cow_.overlapping(reinterpret_cast<std::uintptr_t>(page(2)), kHostPage).size(), 1U);
  cow_.unprotect(page(2), kHostPage, PageKey{1, 1});
  cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(2)), kHostPage);
  EXPECT_TRUE(writable(page(2)));
}

TEST_F(CowTrackerTest, MemoryThatIsNotMappedIsNotProtected) {
  HostPages hole(2 * kHostPage);
  std::byte* unmapped = hole.data() + kHostPage;
  ASSERT_EQ(::munmap(unmapped, kHostPage), 0);
  EXPECT_FALSE(cow_.protect(hole.data(), 2 * kHostPage, PageKey{1, 0})); // the caller copies instead
  EXPECT_FALSE(cow_.anyProtected());
  EXPECT_TRUE(writable(hole.data()));
  ASSERT_EQ(::mmap(unmapped, kHostPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
            static_cast<void*>(unmapped)); // for hole's munmap
}

TEST_F(CowTrackerTest, ReadOnlyMemoryStaysReadOnly) {
  ASSERT_EQ(::mprotect(page(5), kHostPage, PROT_READ), 0);
  ASSERT_TRUE(cow_.protect(page(5), kHostPage, PageKey{1, 0}));
  cow_.unprotect(page(5), kHostPage, PageKey{1, 0});
  cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(5)), kHostPage);
  EXPECT_EQ(protectionOf(page(5)), PROT_READ);
}

// Random protections and releases over eight host pages against a model of
// each page's records. A page some record reads is protected; a page none
// ever read is writable; a page whose last record went lingers: protected
// until it is released, alone or with the lingering pages beside it.
class CowTrackerRandomTest : public CowTrackerTest, public ::testing::WithParamInterface<std::uint64_t> {};

TEST_P(CowTrackerRandomTest, ProtectionFollowsTheRecords) {
  const std::uint64_t seed = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  struct Record {
    std::size_t offset;
    std::size_t bytes;
  };
  std::map<std::uint32_t, Record> records; // by owner page
  std::uint32_t nextOwner = 0;
  std::vector<int> references(8, 0);
  std::vector<bool> lingering(8, false);
  const auto pagesOf = [](const Record& record) {
    return std::pair{record.offset / kHostPage, (record.offset + record.bytes + kHostPage - 1) / kHostPage};
  };
  for (int step = 0; step < 200 && !HasFailure(); ++step) {
    const auto choice = random() % 4;
    if (choice == 0 || records.empty()) {
      const std::size_t offset = random() % (8 * kHostPage - 1);
      const Record record{offset, 1 + random() % (8 * kHostPage - offset)};
      ASSERT_TRUE(cow_.protect(buffer_.data() + record.offset, record.bytes, PageKey{1, nextOwner}));
      records[nextOwner++] = record;
      const auto [first, last] = pagesOf(record);
      for (std::size_t i = first; i < last; ++i) {
        ++references[i];
        lingering[i] = false;
      }
    } else if (choice == 1) {
      auto it = std::next(records.begin(), static_cast<std::ptrdiff_t>(random() % records.size()));
      cow_.unprotect(buffer_.data() + it->second.offset, it->second.bytes, PageKey{1, it->first});
      const auto [first, last] = pagesOf(it->second);
      for (std::size_t i = first; i < last; ++i)
        if (--references[i] == 0) lingering[i] = true;
      records.erase(it);
    } else if (choice == 2) { // a write fault on one page
      const std::size_t i = random() % 8;
      EXPECT_EQ(cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(i)) + random() % kHostPage), lingering[i]);
      lingering[i] = false;
    } else { // someone else is about to write a range
      const std::size_t first = random() % 8;
      const std::size_t last = first + 1 + random() % (8 - first);
      cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(page(first)), (last - first) * kHostPage);
      for (std::size_t i = first; i < last; ++i)
        lingering[i] = false;
    }
    for (std::size_t i = 0; i < 8; ++i) {
      const bool expectWritable = references[i] == 0 && !lingering[i];
      if (references[i] > 0 || expectWritable) {
        EXPECT_EQ(writable(page(i)), expectWritable) << "page " << i << " at step " << step;
      }
      if (lingering[i] && writable(page(i))) lingering[i] = false; // released with a neighbour
    }
    EXPECT_EQ(cow_.empty(), records.empty());
    EXPECT_EQ(cow_.overlapping(reinterpret_cast<std::uintptr_t>(buffer_.data()), buffer_.size()).size(),
              records.size());
  }
  for (const auto& [owner, record] : records)
    cow_.unprotect(buffer_.data() + record.offset, record.bytes, PageKey{1, owner});
  cow_.releaseLingering(reinterpret_cast<std::uintptr_t>(buffer_.data()), buffer_.size());
  EXPECT_FALSE(cow_.anyProtected());
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_TRUE(writable(page(i))) << "page " << i;
}

INSTANTIATE_TEST_SUITE_P(Seeds, CowTrackerRandomTest, ::testing::Range<std::uint64_t>(1, 11));

} // namespace
} // namespace mqx::test
