#include "ssb/common/table_writer.hpp"

#include "ssb/common/error.hpp"

#include <algorithm>

namespace mqx::ssb {
namespace {

std::string relativeFile(const TableSchema &schema, std::string_view column,
                         std::string_view extension) {
  return std::string(schema.name) + "/" + std::string(column) + std::string(extension);
}

void checkCodes(std::string_view column, const std::vector<std::int32_t> &codes,
                std::int32_t dictionarySize) {
  if (codes.empty())
    return;
  auto [low, high] = std::minmax_element(codes.begin(), codes.end());
  if (*low < 0 || *high >= dictionarySize)
    throw DataError("column " + std::string(column) + " holds codes outside its dictionary of " +
                    std::to_string(dictionarySize));
}

} // namespace

TableWriter::TableWriter(const std::filesystem::path &dataDir, TableId table,
                         DictionaryMap dictionaries)
    : dataDir_(dataDir), schema_(schemaOf(table)), dictionaries_(std::move(dictionaries)) {
  std::filesystem::create_directories(dataDir_ / schema_.name);
  for (const ColumnSchema &column : schema_.columns) {
    if (column.dictionary && !dictionaries_.contains(column.name))
      throw DataError("no dictionary given for " + std::string(column.name));
    writers_.emplace_back(dataDir_ / relativeFile(schema_, column.name, ".bin"));
  }
}

void TableWriter::append(std::span<const std::vector<std::int32_t>> columns) {
  if (columns.size() != schema_.columns.size())
    throw DataError("append to " + std::string(schema_.name) + " with " +
                    std::to_string(columns.size()) + " columns, expected " +
                    std::to_string(schema_.columns.size()));
  std::size_t rows = columns.empty() ? 0 : columns.front().size();
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const ColumnSchema &column = schema_.columns[i];
    if (columns[i].size() != rows)
      throw DataError("column " + std::string(column.name) + " has a different length");
    if (column.dictionary)
      checkCodes(column.name, columns[i], dictionaries_.find(column.name)->second.size());
    writers_[i].append(columns[i]);
  }
  rows_ += static_cast<std::int64_t>(rows);
}

TableEntry TableWriter::finish() {
  TableEntry entry;
  entry.name = std::string(schema_.name);
  entry.rows = rows_;
  for (std::size_t i = 0; i < schema_.columns.size(); ++i) {
    const ColumnSchema &column = schema_.columns[i];
    writers_[i].close();
    ColumnEntry columnEntry;
    columnEntry.name = std::string(column.name);
    columnEntry.file = relativeFile(schema_, column.name, ".bin");
    if (column.dictionary) {
      const Dictionary &dictionary = dictionaries_.find(column.name)->second;
      columnEntry.dictionary = relativeFile(schema_, column.name, ".dict");
      columnEntry.dictionarySize = dictionary.size();
      writeDictionary(dataDir_ / columnEntry.dictionary, dictionary);
    }
    entry.columns.push_back(std::move(columnEntry));
  }
  return entry;
}

TableEntry writeTable(const std::filesystem::path &dataDir, const ColumnarTable &table,
                      DictionaryMap dictionaries) {
  TableWriter writer(dataDir, table.table, std::move(dictionaries));
  writer.append(table.columns);
  return writer.finish();
}

} // namespace mqx::ssb
