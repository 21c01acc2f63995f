// The generator's output is a function of (scale factor, seed) alone: not of
// the thread count, nor of the run.
#include "ssb/common/ssb_data.hpp"
#include "temp_dir.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace mqx::ssb {
namespace {

// Relative path -> content of every file under `root`.
std::map<std::string, std::string> readTree(const std::filesystem::path &root) {
  std::map<std::string, std::string> files;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file())
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    files[std::filesystem::relative(entry.path(), root).string()] =
        std::string(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

TEST(DeterminismTest, SameSeedGivesIdenticalFilesWhateverTheThreadCount) {
  test::TempDir first, second;
  test::generateInto(first.path(), 0.02, 42, 1);
  test::generateInto(second.path(), 0.02, 42, 3);
  auto a = readTree(first.path());
  auto b = readTree(second.path());
  // 5 tables' columns and dictionaries, plus the manifest.
  EXPECT_GT(a.size(), 50u);
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[path, content] : a) {
    ASSERT_TRUE(b.contains(path)) << path;
    EXPECT_TRUE(content == b.at(path)) << path << " differs between runs";
  }
}

TEST(DeterminismTest, RegeneratingIntoTheSameDirectoryReproducesIt) {
  test::TempDir dir;
  test::generateInto(dir.path(), 0.01, 9, 2);
  auto before = readTree(dir.path());
  test::generateInto(dir.path(), 0.01, 9, 2);
  EXPECT_TRUE(before == readTree(dir.path()));
}

TEST(DeterminismTest, DifferentSeedsGiveDifferentData) {
  const SsbData &a = test::generatedDataset(0.01, 1).data;
  const SsbData &b = test::generatedDataset(0.01, 2).data;
  EXPECT_NE(a.loadColumn(TableId::Lineorder, "lo_partkey"),
            b.loadColumn(TableId::Lineorder, "lo_partkey"));
  EXPECT_NE(a.loadColumn(TableId::Customer, "c_city"), b.loadColumn(TableId::Customer, "c_city"));
  EXPECT_NE(a.loadColumn(TableId::Part, "p_brand1"), b.loadColumn(TableId::Part, "p_brand1"));
  // The date dimension is the calendar: the same for every seed.
  EXPECT_EQ(a.loadColumn(TableId::Date, "d_datekey"), b.loadColumn(TableId::Date, "d_datekey"));
  EXPECT_EQ(a.manifest().seed, 1u);
  EXPECT_EQ(b.manifest().seed, 2u);
}

} // namespace
} // namespace mqx::ssb
