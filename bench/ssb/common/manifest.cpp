#include "ssb/common/manifest.hpp"

#include "ssb/common/error.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <sstream>

namespace mqx::ssb {
namespace {

using Json = nlohmann::ordered_json;

// The accessors check the kind of every field themselves and name the field:
// nlohmann's own type errors name only the kind, and get<int64_t>() would
// accept 1.5 as a row count.
const Json& field(const Json& object, const std::string& key) {
  if (!object.is_object()) throw DataError("expected an object holding \"" + key + "\", found " + object.type_name());
  auto found = object.find(key);
  if (found == object.end()) throw DataError("no \"" + key + "\"");
  return *found;
}

const std::string& stringField(const Json& object, const std::string& key) {
  const Json& value = field(object, key);
  if (!value.is_string()) throw DataError("\"" + key + "\" is not a string but " + value.type_name());
  return value.get_ref<const std::string&>();
}

std::int64_t integerField(const Json& object, const std::string& key) {
  const Json& value = field(object, key);
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() &&
       value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
    throw DataError("\"" + key + "\" is not an integer of 64 bits: " + value.dump());
  return value.get<std::int64_t>();
}

double numberField(const Json& object, const std::string& key) {
  const Json& value = field(object, key);
  if (!value.is_number()) throw DataError("\"" + key + "\" is not a number but " + value.type_name());
  return value.get<double>();
}

const Json& arrayField(const Json& object, const std::string& key) {
  const Json& value = field(object, key);
  if (!value.is_array()) throw DataError("\"" + key + "\" is not an array but " + value.type_name());
  return value;
}

// The seed is written as an unsigned integer; manifests written before kept
// it as a signed 64-bit integer (negative above 2^63), read back bit for bit.
std::uint64_t seedField(const Json& object) {
  const Json& value = field(object, "seed");
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) return static_cast<std::uint64_t>(value.get<std::int64_t>());
  throw DataError("\"seed\" is not an integer: " + value.dump());
}

Json columnToJson(const ColumnEntry& column) {
  Json object = {{"name", column.name}, {"type", column.type}, {"file", column.file}};
  if (column.hasDictionary()) {
    object["dictionary"] = column.dictionary;
    object["dictionary_size"] = column.dictionarySize;
  }
  return object;
}

ColumnEntry columnFromJson(const Json& json) {
  ColumnEntry column;
  column.name = stringField(json, "name");
  column.type = stringField(json, "type");
  column.file = stringField(json, "file");
  if (json.contains("dictionary")) {
    column.dictionary = stringField(json, "dictionary");
    column.dictionarySize = integerField(json, "dictionary_size");
  }
  return column;
}

Json tableToJson(const TableEntry& table) {
  Json columns = Json::array();
  for (const ColumnEntry& column : table.columns)
    columns.push_back(columnToJson(column));
  return {{"name", table.name}, {"rows", table.rows}, {"columns", std::move(columns)}};
}

TableEntry tableFromJson(const Json& json) {
  TableEntry table;
  table.name = stringField(json, "name");
  table.rows = integerField(json, "rows");
  if (table.rows < 0) throw DataError("table " + table.name + " has a negative row count");
  for (const Json& column : arrayField(json, "columns"))
    table.columns.push_back(columnFromJson(column));
  return table;
}

} // namespace

const ColumnEntry* TableEntry::find(std::string_view column) const {
  for (const ColumnEntry& entry : columns)
    if (entry.name == column) return &entry;
  return nullptr;
}

const ColumnEntry& TableEntry::column(std::string_view column) const {
  if (const ColumnEntry* entry = find(column)) return *entry;
  throw DataError("table " + name + " has no column " + std::string(column));
}

const TableEntry* Manifest::find(std::string_view table) const {
  for (const TableEntry& entry : tables)
    if (entry.name == table) return &entry;
  return nullptr;
}

const TableEntry& Manifest::table(std::string_view table) const {
  if (const TableEntry* entry = find(table)) return *entry;
  throw DataError("the manifest has no table " + std::string(table));
}

Json Manifest::toJson() const {
  Json tableArray = Json::array();
  for (const TableEntry& table : tables)
    tableArray.push_back(tableToJson(table));
  return {
      {"format", kManifestFormat},
      {"version", kManifestVersion},
      {"byte_order", "little"},
      {"scale_factor", scaleFactor},
      {"seed", seed},
      {"generator", generator},
      {"tables", std::move(tableArray)},
  };
}

Manifest Manifest::fromJson(const Json& json) {
  if (stringField(json, "format") != kManifestFormat)
    throw DataError("not an mqx SSB manifest (format is \"" + stringField(json, "format") + "\")");
  if (integerField(json, "version") != kManifestVersion)
    throw DataError("unsupported SSB manifest version " + std::to_string(integerField(json, "version")));
  if (stringField(json, "byte_order") != "little")
    throw DataError("unsupported byte order " + stringField(json, "byte_order"));
  Manifest manifest;
  manifest.scaleFactor = numberField(json, "scale_factor");
  manifest.seed = seedField(json);
  manifest.generator = stringField(json, "generator");
  for (const Json& table : arrayField(json, "tables"))
    manifest.tables.push_back(tableFromJson(table));
  return manifest;
}

Manifest readManifest(const std::filesystem::path& dataDir) {
  std::filesystem::path path = dataDir / kManifestFileName;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return Manifest::fromJson(Json::parse(text.str()));
  } catch (const Json::exception& error) { // not JSON
    throw DataError(path.string() + ": " + error.what());
  } catch (const DataError& error) { // JSON, but not a manifest
    throw DataError(path.string() + ": " + error.what());
  }
}

void writeManifest(const std::filesystem::path& dataDir, const Manifest& manifest) {
  // Written aside and renamed into place, so that a reader never sees half a
  // manifest and an interrupted writer leaves none.
  std::filesystem::path path = dataDir / kManifestFileName;
  std::filesystem::path partial = path;
  partial += ".partial";
  std::string text;
  try {
    text = manifest.toJson().dump(2) + '\n';
  } catch (const Json::exception& error) { // a name that is not UTF-8
    throw DataError("cannot write " + path.string() + ": " + error.what());
  }
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw DataError("cannot write " + partial.string());
  }
  std::filesystem::rename(partial, path);
}

} // namespace mqx::ssb
