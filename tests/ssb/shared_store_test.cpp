// The shared-memory column store (ssb/common/shared_column_store.hpp) in one
// process: every column equals the column file's, a cache over the store
// gives the reference the same results as one over the files, texts round
// trip, and every refusal and bounded wait says what it is about.
#include "ssb/common/column_cache.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/shared_column_store.hpp"
#include "ssb/reference/query_result.hpp"
#include "ssb/reference/reference_queries.hpp"
#include "test_datasets.hpp"

#include <boost/interprocess/shared_memory_object.hpp>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace mqx::ssb {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string uniqueName(const std::string& what) { return "test-" + what + "-" + std::to_string(::getpid()); }

// The DataError's message, or "" when `action` does not throw one.
template <class Action> std::string errorOf(Action action) {
  try {
    action();
  } catch (const DataError& error) {
    return error.what();
  }
  return "";
}

TEST(SharedColumnStoreTest, HoldsEveryColumnOfTheDirectory) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  SharedColumnStore loader = SharedColumnStore::create(uniqueName("columns"), dataset.data, 4096);
  loader.publish();
  SharedColumnStore store = SharedColumnStore::open(loader.name(), 1s);
  EXPECT_EQ(store.loaderPid(), ::getpid());
  EXPECT_EQ(store.scaleFactor(), 0.01);
  EXPECT_EQ(store.seed(), 1u);
  EXPECT_EQ(std::filesystem::canonical(store.dataDirectory()), std::filesystem::canonical(dataset.dir));
  std::size_t columns = 0;
  for (const TableSchema& table : ssbSchema())
    for (const ColumnSchema& column : table.columns) {
      std::vector<std::int32_t> fromFile = dataset.data.loadColumn(table.id, column.name);
      auto shared = store.column(table.id, column.name);
      ASSERT_EQ(shared.size(), fromFile.size()) << column.name;
      EXPECT_TRUE(std::equal(shared.begin(), shared.end(), fromFile.begin())) << column.name;
      // Page-aligned: a lazy copy of a column covers whole host pages.
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(shared.data()) % 4096, 0u) << column.name;
      ++columns;
    }
  EXPECT_EQ(store.columnCount(), columns);
  EXPECT_NE(errorOf([&] { store.column(TableId::Customer, "c_name"); }).find("has no column customer.c_name"),
            std::string::npos);
}

TEST(SharedColumnStoreTest, ReferenceOverTheStoreEqualsReferenceOverFiles) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  SharedColumnStore loader = SharedColumnStore::create(uniqueName("reference"), dataset.data, 4096);
  loader.publish();
  ColumnCache fromFiles(dataset.data);
  ColumnCache fromStore(dataset.data, loader);
  for (QueryId query : kAllQueries)
    EXPECT_EQ(describeDifference(runReferenceQuery(query, fromFiles), runReferenceQuery(query, fromStore)), "")
        << queryName(query);
  EXPECT_EQ(fromStore.loadedBytes(), 0u); // nothing read from files
  EXPECT_GT(fromFiles.loadedBytes(), 0u);
}

TEST(SharedColumnStoreTest, TextsRoundTripAndAreBounded) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  SharedColumnStore loader = SharedColumnStore::create(uniqueName("texts"), dataset.data, 64);
  loader.putText("q1.1", "revenue\n42\n");
  loader.putText("q2.1", "");
  EXPECT_NE(errorOf([&] { loader.putText("q3.1", std::string(60, 'x')); }).find("no room"), std::string::npos);
  loader.publish();
  EXPECT_NE(errorOf([&] { loader.putText("q4.1", "late"); }).find("before it is published"), std::string::npos);
  SharedColumnStore store = SharedColumnStore::open(loader.name(), 1s);
  EXPECT_EQ(store.text("q1.1"), "revenue\n42\n");
  EXPECT_EQ(store.text("q2.1"), "");
  EXPECT_FALSE(store.text("q3.1").has_value());
}

TEST(SharedColumnStoreTest, AQueryWaitsBoundedForAStoreThatIsNotPublished) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  SharedColumnStore loader = SharedColumnStore::create(uniqueName("unpublished"), dataset.data, 0);
  auto start = Clock::now();
  std::string message = errorOf([&] { SharedColumnStore::open(loader.name(), 200ms); });
  auto waited = Clock::now() - start;
  EXPECT_NE(message.find("waited 200 ms for its loader (pid " + std::to_string(::getpid()) + ") to finish loading"),
            std::string::npos)
      << message;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
}

TEST(SharedColumnStoreTest, AMissingStoreIsABoundedWaitNamingIt) {
  auto start = Clock::now();
  std::string message = errorOf([&] { SharedColumnStore::open(uniqueName("missing"), 100ms); });
  EXPECT_NE(message.find("shared column store " + uniqueName("missing") + " not ready: waited 100 ms for it to exist"),
            std::string::npos)
      << message;
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(SharedColumnStoreTest, RefusesBadNamesAndASecondLoader) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  for (const std::string& bad : std::vector<std::string>{"", "a/b", "with space", std::string(65, 'n')})
    EXPECT_NE(errorOf([&] { SharedColumnStore::open(bad, 0ms); }).find("shared column store name"), std::string::npos)
        << bad;
  SharedColumnStore loader = SharedColumnStore::create(uniqueName("twice"), dataset.data, 0);
  loader.publish();
  // A live loader keeps its store: another process cannot take the name.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string message = errorOf([&] { SharedColumnStore::create(loader.name(), dataset.data, 0); });
    ::_exit(message.find("already kept by loader pid " + std::to_string(::getppid())) != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(SharedColumnStoreTest, AStoreWhoseLoaderDiedIsRefusedThenReplaced) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  const std::string name = uniqueName("orphan");
  // A loader that dies without removing its store (as under SIGKILL).
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SharedColumnStore store = SharedColumnStore::create(name, dataset.data, 0);
    store.publish();
    ::_exit(0); // no destructor: the object stays behind
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::string message = errorOf([&] { SharedColumnStore::open(name, 5s); });
  EXPECT_NE(message.find("its loader (pid " + std::to_string(child) + ") is gone"), std::string::npos) << message;
  // A new loader replaces it.
  SharedColumnStore loader = SharedColumnStore::create(name, dataset.data, 0);
  loader.publish();
  EXPECT_EQ(SharedColumnStore::open(name, 1s).loaderPid(), ::getpid());
}

TEST(SharedColumnStoreTest, CacheRefusesAStoreOfOtherData) {
  const auto& small = test::generatedDataset(0.01, 1);
  const auto& other = test::generatedDataset(0.01, 2);
  SharedColumnStore loader = SharedColumnStore::create(uniqueName("other"), small.data, 0);
  loader.publish();
  std::string message = errorOf([&] { ColumnCache cache(other.data, loader); });
  EXPECT_NE(message.find("seed 1"), std::string::npos) << message;
  EXPECT_NE(message.find("seed 2"), std::string::npos) << message;
}

TEST(SharedColumnStoreTest, StopRequestReachesTheLoaderAndRemovalHidesTheStore) {
  const auto& dataset = test::generatedDataset(0.01, 1);
  const std::string name = uniqueName("stop");
  {
    SharedColumnStore loader = SharedColumnStore::create(name, dataset.data, 0);
    loader.publish();
    EXPECT_FALSE(loader.stopRequested());
    EXPECT_TRUE(SharedColumnStore::requestStop(name));
    EXPECT_TRUE(loader.stopRequested());
    SharedColumnStore mapped = SharedColumnStore::open(name, 1s);
    auto column = mapped.column(TableId::Date, "d_datekey");
    // The loader goes (removing the object); a query's mapping stays valid.
    loader = SharedColumnStore::create(uniqueName("stop-other"), dataset.data, 0);
    EXPECT_EQ(column.front(), 19920101);
  }
  EXPECT_FALSE(SharedColumnStore::requestStop(name));
  EXPECT_NE(errorOf([&] { SharedColumnStore::open(name, 0ms); }).find("for it to exist"), std::string::npos);
}

} // namespace
} // namespace mqx::ssb
