// The on-disk layout's building blocks: dictionaries and column files (the
// manifest: manifest_test.cpp).
#include "ssb/common/column_file.hpp"
#include "ssb/common/dictionary.hpp"
#include "ssb/common/error.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

namespace mqx::ssb {
namespace {

TEST(DictionaryTest, CodesFollowByteOrder) {
  Dictionary dictionary = Dictionary::fromValues({"MFGR#2228", "MFGR#2221", "MFGR#2229", "MFGR#2221", "MFGR#1101"});
  ASSERT_EQ(dictionary.size(), 4);
  EXPECT_EQ(dictionary.value(0), "MFGR#1101");
  EXPECT_EQ(dictionary.code("MFGR#2228"), 2);
  // A string range becomes a code range.
  EXPECT_EQ(dictionary.lowerBound("MFGR#2221"), 1);
  EXPECT_EQ(dictionary.upperBound("MFGR#2228"), 3);
  EXPECT_EQ(dictionary.lowerBound("MFGR#2222"), 2);
  EXPECT_FALSE(dictionary.find("MFGR#2222").has_value());
  EXPECT_THROW(dictionary.code("MFGR#2222"), DataError);
  EXPECT_THROW(dictionary.value(4), DataError);
  EXPECT_THROW(dictionary.value(-1), DataError);
}

TEST(DictionaryTest, RejectsUnsortedDuplicateOrMultilineValues) {
  EXPECT_THROW(Dictionary({"b", "a"}), DataError);
  EXPECT_THROW(Dictionary({"a", "a"}), DataError);
  EXPECT_THROW(Dictionary({"a\nb"}), DataError);
}

TEST(DictionaryTest, RoundTripsThroughAFile) {
  test::TempDir dir;
  Dictionary dictionary({"", "PERU     0", "UNITED KI1", "x y z"});
  writeDictionary(dir.path() / "d.dict", dictionary);
  EXPECT_EQ(readDictionary(dir.path() / "d.dict"), dictionary);
}

TEST(ColumnFileTest, RoundTripsLittleEndianInt32) {
  test::TempDir dir;
  std::vector<std::int32_t> values{
      0, 1, -1, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), 19980802};
  Int32ColumnWriter writer(dir.path() / "c.bin");
  writer.append(std::span(values).first(2));
  writer.append(std::span(values).subspan(2));
  EXPECT_EQ(writer.rows(), 6);
  writer.close();
  EXPECT_EQ(readInt32Column(dir.path() / "c.bin", 6), values);

  // The bytes on disk are little-endian whatever the host.
  std::ifstream in(dir.path() / "c.bin", std::ios::binary);
  std::vector<unsigned char> bytes(24);
  in.read(reinterpret_cast<char*>(bytes.data()), 24);
  EXPECT_EQ(bytes[4], 1);
  EXPECT_EQ(bytes[5], 0);
  EXPECT_EQ(bytes[20], 0x02); // 19980802 = 0x0130E202
  EXPECT_EQ(bytes[21], 0xE2);
  EXPECT_EQ(bytes[22], 0x30);
  EXPECT_EQ(bytes[23], 0x01);
}

TEST(ColumnFileTest, RejectsAWrongRowCountOrMissingFile) {
  test::TempDir dir;
  Int32ColumnWriter writer(dir.path() / "c.bin");
  std::vector<std::int32_t> values{1, 2, 3};
  writer.append(values);
  writer.close();
  EXPECT_THROW(readInt32Column(dir.path() / "c.bin", 2), DataError);
  EXPECT_THROW(readInt32Column(dir.path() / "c.bin", 4), DataError);
  EXPECT_THROW(readInt32Column(dir.path() / "missing.bin", 0), DataError);
}

} // namespace
} // namespace mqx::ssb
