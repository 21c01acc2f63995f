// The loader: every column of a generated directory loads at its row count,
// and incomplete or inconsistent directories are refused with DataError.
#include "ssb/common/column_cache.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/ssb_data.hpp"
#include "temp_dir.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace mqx::ssb {
namespace {

TEST(LoaderTest, LoadsEveryColumnAndDictionaryOfAGeneratedDirectory) {
  const SsbData& data = test::generatedDataset(0.01, 1).data;
  for (const TableSchema& table : ssbSchema()) {
    std::int64_t rows = data.rows(table.id);
    EXPECT_GT(rows, 0) << table.name;
    for (const ColumnSchema& column : table.columns) {
      EXPECT_EQ(static_cast<std::int64_t>(data.loadColumn(table.id, column.name).size()), rows) << column.name;
      if (column.dictionary)
        EXPECT_EQ(data.loadDictionary(table.id, column.name).size(),
                  data.manifest().table(table.name).column(column.name).dictionarySize)
            << column.name;
      else
        EXPECT_THROW(data.loadDictionary(table.id, column.name), DataError) << column.name;
    }
  }
  EXPECT_THROW(data.loadColumn(TableId::Customer, "c_name"), DataError);
}

TEST(LoaderTest, ColumnCacheReadsEachColumnOnce) {
  const SsbData& data = test::generatedDataset(0.01, 1).data;
  ColumnCache cache(data);
  const auto first = cache.column(TableId::Lineorder, "lo_revenue");
  std::size_t bytes = cache.loadedBytes();
  EXPECT_EQ(bytes, first.size() * sizeof(std::int32_t));
  const auto second = cache.column(TableId::Lineorder, "lo_revenue");
  EXPECT_EQ(first.data(), second.data());
  EXPECT_EQ(first.size(), second.size());
  EXPECT_EQ(cache.loadedBytes(), bytes);
  EXPECT_EQ(&cache.dictionary(TableId::Part, "p_brand1"), &cache.dictionary(TableId::Part, "p_brand1"));
}

// A private copy of a generated directory that a test may damage.
class DamagedDirectoryTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::filesystem::copy(test::generatedDataset(0.01, 1).dir, dir_.path(), std::filesystem::copy_options::recursive);
  }

  void rewriteManifest(const std::function<void(Manifest&)>& edit) {
    Manifest manifest = readManifest(dir_.path());
    edit(manifest);
    writeManifest(dir_.path(), manifest);
  }

  test::TempDir dir_;
};

TEST_F(DamagedDirectoryTest, IntactCopyOpens) { EXPECT_NO_THROW(SsbData::open(dir_.path())); }

TEST_F(DamagedDirectoryTest, MissingManifestIsRefused) {
  std::filesystem::remove(dir_.path() / "manifest.json");
  EXPECT_THROW(SsbData::open(dir_.path()), DataError);
}

TEST_F(DamagedDirectoryTest, MissingColumnIsRefused) {
  rewriteManifest([](Manifest& m) { m.tables[0].columns.pop_back(); });
  EXPECT_THROW(SsbData::open(dir_.path()), DataError);
}

TEST_F(DamagedDirectoryTest, MissingTableIsRefused) {
  rewriteManifest([](Manifest& m) { m.tables.pop_back(); });
  EXPECT_THROW(SsbData::open(dir_.path()), DataError);
}

TEST_F(DamagedDirectoryTest, UnsupportedTypeIsRefused) {
  rewriteManifest([](Manifest& m) { m.tables[1].columns[0].type = "int64"; });
  EXPECT_THROW(SsbData::open(dir_.path()), DataError);
}

TEST_F(DamagedDirectoryTest, DictionaryColumnWithoutDictionaryIsRefused) {
  rewriteManifest([](Manifest& m) { m.tables[1].columns[1].dictionary.clear(); });
  EXPECT_THROW(SsbData::open(dir_.path()), DataError);
}

TEST_F(DamagedDirectoryTest, TruncatedColumnFailsToLoad) {
  std::filesystem::resize_file(dir_.path() / "lineorder" / "lo_quantity.bin", 40);
  SsbData data = SsbData::open(dir_.path());
  EXPECT_THROW(data.loadColumn(TableId::Lineorder, "lo_quantity"), DataError);
  EXPECT_NO_THROW(data.loadColumn(TableId::Lineorder, "lo_discount"));
}

TEST_F(DamagedDirectoryTest, DictionaryOfTheWrongSizeFailsToLoad) {
  std::ofstream(dir_.path() / "supplier" / "s_region.dict", std::ios::app) << "ZANZIBAR\n";
  SsbData data = SsbData::open(dir_.path());
  EXPECT_THROW(data.loadDictionary(TableId::Supplier, "s_region"), DataError);
}

} // namespace
} // namespace mqx::ssb
