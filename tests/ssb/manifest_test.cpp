// The manifest (manifest.json): its JSON round trip through disk, the kinds
// of its values, and the DataError, naming the file, for anything that is not
// a manifest of this version.
#include "ssb/common/error.hpp"
#include "ssb/common/manifest.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <sstream>

namespace mqx::ssb {
namespace {

using Json = nlohmann::ordered_json;

// Quotes, backslashes, control characters and non-ASCII (2, 3 and 4 bytes in
// UTF-8): what a hand-written escaper gets wrong.
const std::string kAwkwardText = "quote \" backslash \\ newline \n tab \t bell \x07 unit \x1f e\xCC\x81 "
                                 "\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E /slash";

Manifest sampleManifest() {
  Manifest manifest;
  manifest.scaleFactor = 0.05;
  manifest.seed = 0xFEDCBA9876543210ull; // above INT64_MAX: must survive as a JSON integer
  manifest.generator = "test";
  TableEntry table;
  table.name = "customer";
  table.rows = 1500;
  table.columns.push_back(ColumnEntry{"c_custkey", "int32", "customer/c_custkey.bin", "", 0});
  table.columns.push_back(ColumnEntry{"c_city", "int32", "customer/c_city.bin", "customer/c_city.dict", 250});
  manifest.tables.push_back(table);
  return manifest;
}

std::string fileText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// The message of the DataError that reading `dir`'s manifest throws; empty
// (a test failure) when it throws nothing or something else.
std::string readError(const std::filesystem::path& dir) {
  try {
    readManifest(dir);
    ADD_FAILURE() << "readManifest accepted " << fileText(dir / kManifestFileName);
  } catch (const DataError& error) {
    return error.what();
  }
  return "";
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
  const ColumnEntry& city = read.table("customer").column("c_city");
  EXPECT_TRUE(city.hasDictionary());
  EXPECT_EQ(city.dictionarySize, 250);
  EXPECT_FALSE(read.table("customer").column("c_custkey").hasDictionary());
  EXPECT_THROW(read.table("lineorder"), DataError);
  EXPECT_THROW(read.table("customer").column("c_name"), DataError);
}

TEST(ManifestTest, RoundTripsAwkwardTextInEveryStringField) {
  test::TempDir dir;
  Manifest written = sampleManifest();
  written.generator = kAwkwardText;
  written.tables[0].name = "table " + kAwkwardText;
  ColumnEntry& column = written.tables[0].columns[1];
  column.name = "name " + kAwkwardText;
  column.type = "type " + kAwkwardText;
  column.file = "file " + kAwkwardText;
  column.dictionary = "dictionary " + kAwkwardText;
  writeManifest(dir.path(), written);

  Manifest read = readManifest(dir.path());
  EXPECT_EQ(read.generator, written.generator);
  EXPECT_EQ(read.tables[0].name, written.tables[0].name);
  const ColumnEntry& back = read.tables[0].columns[1];
  EXPECT_EQ(back.name, column.name);
  EXPECT_EQ(back.type, column.type);
  EXPECT_EQ(back.file, column.file);
  EXPECT_EQ(back.dictionary, column.dictionary);
  // Any JSON reader gets the same strings: the file is valid JSON.
  EXPECT_EQ(Json::parse(fileText(dir.path() / kManifestFileName)), written.toJson());
}

TEST(ManifestTest, IsTwoSpaceIndentedAndKeepsNumberKinds) {
  test::TempDir dir;
  Manifest written = sampleManifest();
  written.scaleFactor = 2.0;
  writeManifest(dir.path(), written);
  const std::string text = fileText(dir.path() / kManifestFileName);
  EXPECT_EQ(text.rfind("{\n  \"format\": \"mqx-ssb-columnar\",\n  \"version\": 1,\n", 0), 0u) << text;
  EXPECT_NE(text.find("\"scale_factor\": 2.0,"), std::string::npos) << text; // a double stays a double
  EXPECT_NE(text.find("\"seed\": 18364758544493064720,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"rows\": 1500,"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  Manifest read = readManifest(dir.path());
  EXPECT_EQ(read.seed, 0xFEDCBA9876543210ull);
  EXPECT_EQ(read.tables[0].rows, 1500);
}

TEST(ManifestTest, ReadsTheSignedSeedOfEarlierManifests) {
  test::TempDir dir;
  Json json = sampleManifest().toJson();
  json["seed"] = static_cast<std::int64_t>(0xFEDCBA9876543210ull); // negative
  writeText(dir.path() / kManifestFileName, json.dump(2));
  EXPECT_EQ(readManifest(dir.path()).seed, 0xFEDCBA9876543210ull);
}

TEST(ManifestTest, DecodesUnicodeEscapes) {
  test::TempDir dir;
  std::string text = sampleManifest().toJson().dump(2);
  const std::string generator = "\"generator\": \"test\"";
  text.replace(text.find(generator), generator.size(), R"("generator": "a\u00e9\u20ac\ud834\udd1e")");
  writeText(dir.path() / kManifestFileName, text);
  EXPECT_EQ(readManifest(dir.path()).generator, "a\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E");
}

TEST(ManifestTest, MalformedJsonIsADataErrorNamingTheFile) {
  test::TempDir dir;
  const std::string path = (dir.path() / kManifestFileName).string();
  // The last two: nesting deep enough to exhaust a recursive parser's stack.
  for (const std::string& text :
       {std::string(), std::string("{"), std::string("[1,]"), std::string("{\"a\" 1}"), std::string("tru"),
        std::string("1 2"), std::string("\"open"), std::string("{\"a\":1,}"), std::string("\"bad \\q escape\""),
        std::string("-"), std::string("[1e]"), std::string("\"\xFF\""), std::string(100000, '['),
        std::string(100000, '[') + std::string(100000, ']')}) {
    writeText(path, text);
    const std::string error = readError(dir.path());
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  }
}

TEST(ManifestTest, WrongKindsAreADataErrorNamingTheField) {
  test::TempDir dir;
  const std::string path = (dir.path() / kManifestFileName).string();
  auto expectRefused = [&](const std::string& field, const std::function<void(Json&)>& damage) {
    Json json = sampleManifest().toJson();
    damage(json);
    writeText(path, json.dump());
    const std::string error = readError(dir.path());
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
    EXPECT_NE(error.find("\"" + field + "\""), std::string::npos) << error;
  };
  expectRefused("rows", [](Json& json) { json["tables"][0]["rows"] = "1500"; });
  expectRefused("rows", [](Json& json) { json["tables"][0]["rows"] = 1.5; });
  expectRefused("rows", [](Json& json) { json["tables"][0]["rows"] = 0xFFFFFFFFFFFFFFFFull; });
  expectRefused("seed", [](Json& json) { json["seed"] = 1.0; });
  expectRefused("scale_factor", [](Json& json) { json["scale_factor"] = "1"; });
  expectRefused("name", [](Json& json) { json["tables"][0]["columns"][0]["name"] = nullptr; });
  expectRefused("dictionary_size", [](Json& json) { json["tables"][0]["columns"][1].erase("dictionary_size"); });
  expectRefused("tables", [](Json& json) { json.erase("tables"); });
  expectRefused("tables", [](Json& json) { json["tables"] = Json::object(); });
  expectRefused("format", [](Json& json) { json = Json::array({json}); });
}

TEST(ManifestTest, RejectsForeignOrNewerFormats) {
  Json json = sampleManifest().toJson();
  auto withField = [&](const std::string& key, Json value) {
    Json changed = json;
    changed[key] = std::move(value);
    return changed;
  };
  EXPECT_NO_THROW(Manifest::fromJson(json));
  EXPECT_THROW(Manifest::fromJson(withField("format", "something-else")), DataError);
  EXPECT_THROW(Manifest::fromJson(withField("version", 2)), DataError);
  EXPECT_THROW(Manifest::fromJson(withField("byte_order", "big")), DataError);
  EXPECT_THROW(readManifest("/nonexistent/mqx-ssb"), DataError);
}

TEST(ManifestTest, ANameThatIsNotUtf8IsRefusedOnWriting) {
  test::TempDir dir;
  Manifest manifest = sampleManifest();
  manifest.generator = "latin-1 \xE9";
  try {
    writeManifest(dir.path(), manifest);
    ADD_FAILURE() << "writeManifest wrote a name that is not UTF-8";
  } catch (const DataError& error) {
    EXPECT_NE(std::string(error.what()).find((dir.path() / kManifestFileName).string()), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / kManifestFileName));
}

} // namespace
} // namespace mqx::ssb
