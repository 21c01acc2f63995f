// The on-disk layout's building blocks: JSON, dictionaries, column files and
// the manifest.
#include "ssb/common/column_file.hpp"
#include "ssb/common/dictionary.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/json.hpp"
#include "ssb/common/manifest.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

namespace mqx::ssb {
namespace {

TEST(JsonTest, RoundTripsNestedValues) {
  Json value(Json::Object{
      {"int", std::int64_t{-9007199254740993}}, // not representable as a double
      {"double", 0.1},
      {"whole double", 2.0},
      {"text", "quote \" backslash \\ newline \n tab \t"},
      {"list", Json::Array{Json(true), Json(false), Json(), Json("x")}},
      {"empty", Json::Object{}},
  });
  Json reparsed = Json::parse(value.dump());
  EXPECT_EQ(reparsed, value);
  EXPECT_TRUE(reparsed.at("int").isInteger());
  EXPECT_FALSE(reparsed.at("whole double").isInteger());
  EXPECT_EQ(reparsed.at("text").asString(), "quote \" backslash \\ newline \n tab \t");
}

TEST(JsonTest, DecodesUnicodeEscapes) {
  EXPECT_EQ(Json::parse(R"("a\u00e9\u20ac")").asString(), "a\xC3\xA9\xE2\x82\xAC");
}

TEST(JsonTest, RejectsMalformedInput) {
  for (const char *text : {"", "{", "[1,]", "{\"a\" 1}", "tru", "1 2", "\"open", "{\"a\":1,}",
                           "\"bad \\q escape\"", "-", "[1e]"})
    EXPECT_THROW(Json::parse(text), DataError) << text;
}

TEST(JsonTest, AccessorsCheckTypes) {
  Json value = Json::parse(R"({"n": 3, "s": "x"})");
  EXPECT_EQ(value.at("n").asInt(), 3);
  EXPECT_DOUBLE_EQ(value.at("n").asDouble(), 3.0);
  EXPECT_THROW(value.at("s").asInt(), DataError);
  EXPECT_THROW(value.at("missing"), DataError);
  EXPECT_EQ(value.find("missing"), nullptr);
}

TEST(DictionaryTest, CodesFollowByteOrder) {
  Dictionary dictionary =
      Dictionary::fromValues({"MFGR#2228", "MFGR#2221", "MFGR#2229", "MFGR#2221", "MFGR#1101"});
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
  std::vector<std::int32_t> values{0,
                                   1,
                                   -1,
                                   std::numeric_limits<std::int32_t>::min(),
                                   std::numeric_limits<std::int32_t>::max(),
                                   19980802};
  Int32ColumnWriter writer(dir.path() / "c.bin");
  writer.append(std::span(values).first(2));
  writer.append(std::span(values).subspan(2));
  EXPECT_EQ(writer.rows(), 6);
  writer.close();
  EXPECT_EQ(readInt32Column(dir.path() / "c.bin", 6), values);

  // The bytes on disk are little-endian whatever the host.
  std::ifstream in(dir.path() / "c.bin", std::ios::binary);
  std::vector<unsigned char> bytes(24);
  in.read(reinterpret_cast<char *>(bytes.data()), 24);
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

Manifest sampleManifest() {
  Manifest manifest;
  manifest.scaleFactor = 0.05;
  manifest.seed = 0xFEDCBA9876543210ull; // above INT64_MAX: must survive the signed JSON integer
  manifest.generator = "test";
  TableEntry table;
  table.name = "customer";
  table.rows = 1500;
  table.columns.push_back(ColumnEntry{"c_custkey", "int32", "customer/c_custkey.bin", "", 0});
  table.columns.push_back(
      ColumnEntry{"c_city", "int32", "customer/c_city.bin", "customer/c_city.dict", 250});
  manifest.tables.push_back(table);
  return manifest;
}

TEST(ManifestTest, RoundTripsThroughDisk) {
  test::TempDir dir;
  Manifest written = sampleManifest();
  writeManifest(dir.path(), written);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "manifest.json.partial"));
  Manifest read = readManifest(dir.path());
  EXPECT_EQ(read.seed, written.seed);
  EXPECT_DOUBLE_EQ(read.scaleFactor, 0.05);
  EXPECT_EQ(read.toJson(), written.toJson());
  const ColumnEntry &city = read.table("customer").column("c_city");
  EXPECT_TRUE(city.hasDictionary());
  EXPECT_EQ(city.dictionarySize, 250);
  EXPECT_FALSE(read.table("customer").column("c_custkey").hasDictionary());
  EXPECT_THROW(read.table("lineorder"), DataError);
  EXPECT_THROW(read.table("customer").column("c_name"), DataError);
}

TEST(ManifestTest, RejectsForeignOrNewerFormats) {
  Json json = sampleManifest().toJson();
  auto withField = [&](std::string_view key, Json value) {
    Json::Object object = json.asObject();
    for (auto &[name, field] : object)
      if (name == key)
        field = std::move(value);
    return Json(std::move(object));
  };
  EXPECT_NO_THROW(Manifest::fromJson(json));
  EXPECT_THROW(Manifest::fromJson(withField("format", "something-else")), DataError);
  EXPECT_THROW(Manifest::fromJson(withField("version", 2)), DataError);
  EXPECT_THROW(Manifest::fromJson(withField("byte_order", "big")), DataError);
  EXPECT_THROW(readManifest("/nonexistent/mqx-ssb"), DataError);
}

} // namespace
} // namespace mqx::ssb
