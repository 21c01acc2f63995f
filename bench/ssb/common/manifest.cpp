#include "ssb/common/manifest.hpp"

#include "ssb/common/error.hpp"

#include <fstream>
#include <sstream>

namespace mqx::ssb {
namespace {

Json columnToJson(const ColumnEntry &column) {
  Json::Object object{{"name", column.name}, {"type", column.type}, {"file", column.file}};
  if (column.hasDictionary()) {
    object.emplace_back("dictionary", column.dictionary);
    object.emplace_back("dictionary_size", column.dictionarySize);
  }
  return Json(std::move(object));
}

ColumnEntry columnFromJson(const Json &json) {
  ColumnEntry column;
  column.name = json.at("name").asString();
  column.type = json.at("type").asString();
  column.file = json.at("file").asString();
  if (const Json *dictionary = json.find("dictionary")) {
    column.dictionary = dictionary->asString();
    column.dictionarySize = json.at("dictionary_size").asInt();
  }
  return column;
}

Json tableToJson(const TableEntry &table) {
  Json::Array columns;
  for (const ColumnEntry &column : table.columns)
    columns.push_back(columnToJson(column));
  return Json(Json::Object{{"name", table.name}, {"rows", table.rows}, {"columns", columns}});
}

TableEntry tableFromJson(const Json &json) {
  TableEntry table;
  table.name = json.at("name").asString();
  table.rows = json.at("rows").asInt();
  if (table.rows < 0)
    throw DataError("table " + table.name + " has a negative row count");
  for (const Json &column : json.at("columns").asArray())
    table.columns.push_back(columnFromJson(column));
  return table;
}

} // namespace

const ColumnEntry *TableEntry::find(std::string_view column) const {
  for (const ColumnEntry &entry : columns)
    if (entry.name == column)
      return &entry;
  return nullptr;
}

const ColumnEntry &TableEntry::column(std::string_view column) const {
  if (const ColumnEntry *entry = find(column))
    return *entry;
  throw DataError("table " + name + " has no column " + std::string(column));
}

const TableEntry *Manifest::find(std::string_view table) const {
  for (const TableEntry &entry : tables)
    if (entry.name == table)
      return &entry;
  return nullptr;
}

const TableEntry &Manifest::table(std::string_view table) const {
  if (const TableEntry *entry = find(table))
    return *entry;
  throw DataError("the manifest has no table " + std::string(table));
}

Json Manifest::toJson() const {
  Json::Array tableArray;
  for (const TableEntry &table : tables)
    tableArray.push_back(tableToJson(table));
  return Json(Json::Object{
      {"format", kManifestFormat},
      {"version", kManifestVersion},
      {"byte_order", "little"},
      {"scale_factor", scaleFactor},
      {"seed", seed},
      {"generator", generator},
      {"tables", tableArray},
  });
}

Manifest Manifest::fromJson(const Json &json) {
  if (json.at("format").asString() != kManifestFormat)
    throw DataError("not an mqx SSB manifest (format is \"" + json.at("format").asString() + "\")");
  if (json.at("version").asInt() != kManifestVersion)
    throw DataError("unsupported SSB manifest version " +
                    std::to_string(json.at("version").asInt()));
  if (json.at("byte_order").asString() != "little")
    throw DataError("unsupported byte order " + json.at("byte_order").asString());
  Manifest manifest;
  manifest.scaleFactor = json.at("scale_factor").asDouble();
  // Stored through int64 because JSON integers are signed; the cast back
  // restores every bit of the seed.
  manifest.seed = static_cast<std::uint64_t>(json.at("seed").asInt());
  manifest.generator = json.at("generator").asString();
  for (const Json &table : json.at("tables").asArray())
    manifest.tables.push_back(tableFromJson(table));
  return manifest;
}

Manifest readManifest(const std::filesystem::path &dataDir) {
  std::filesystem::path path = dataDir / kManifestFileName;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError("cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return Manifest::fromJson(Json::parse(text.str()));
  } catch (const DataError &error) {
    throw DataError(path.string() + ": " + error.what());
  }
}

void writeManifest(const std::filesystem::path &dataDir, const Manifest &manifest) {
  // Written aside and renamed into place, so that a reader never sees half a
  // manifest and an interrupted writer leaves none.
  std::filesystem::path path = dataDir / kManifestFileName;
  std::filesystem::path partial = path;
  partial += ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << manifest.toJson().dump();
    if (!out.flush())
      throw DataError("cannot write " + partial.string());
  }
  std::filesystem::rename(partial, path);
}

} // namespace mqx::ssb
