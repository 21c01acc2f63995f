#include "ssb/common/ssb_data.hpp"

#include "ssb/common/column_file.hpp"
#include "ssb/common/error.hpp"

namespace mqx::ssb {
namespace {

// Every table and column the schema names must be in the manifest with a
// supported type, and dictionary columns must name their dictionary; extra
// columns are tolerated so that a later format may add some.
void validate(const Manifest &manifest) {
  for (const TableSchema &table : ssbSchema()) {
    const TableEntry &entry = manifest.table(table.name);
    for (const ColumnSchema &column : table.columns) {
      const ColumnEntry &columnEntry = entry.column(column.name);
      if (columnEntry.type != "int32")
        throw DataError("column " + columnEntry.name + " has unsupported type " + columnEntry.type);
      if (column.dictionary != columnEntry.hasDictionary())
        throw DataError(
            "column " + columnEntry.name +
            (column.dictionary ? " lacks its dictionary" : " should not have a dictionary"));
    }
  }
}

} // namespace

SsbData::SsbData(std::filesystem::path dir, Manifest manifest)
    : dir_(std::move(dir)), manifest_(std::move(manifest)) {}

SsbData SsbData::open(const std::filesystem::path &dataDir) {
  Manifest manifest = readManifest(dataDir);
  validate(manifest);
  return SsbData(dataDir, std::move(manifest));
}

std::int64_t SsbData::rows(TableId table) const { return manifest_.table(tableName(table)).rows; }

const ColumnEntry &SsbData::entry(TableId table, std::string_view column) const {
  return manifest_.table(tableName(table)).column(column);
}

std::vector<std::int32_t> SsbData::loadColumn(TableId table, std::string_view column) const {
  return readInt32Column(dir_ / entry(table, column).file, rows(table));
}

Dictionary SsbData::loadDictionary(TableId table, std::string_view column) const {
  const ColumnEntry &columnEntry = entry(table, column);
  if (!columnEntry.hasDictionary())
    throw DataError("column " + std::string(column) + " is not dictionary-encoded");
  Dictionary dictionary = readDictionary(dir_ / columnEntry.dictionary);
  if (dictionary.size() != columnEntry.dictionarySize)
    throw DataError(columnEntry.dictionary + " holds " + std::to_string(dictionary.size()) +
                    " values, the manifest says " + std::to_string(columnEntry.dictionarySize));
  return dictionary;
}

} // namespace mqx::ssb
