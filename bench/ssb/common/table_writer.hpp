// Writes one table of a data directory: <dir>/<table>/<column>.bin for every
// column of the schema, and <dir>/<table>/<column>.dict for the dictionary
// columns. Rows may be appended in any number of batches, which is how the
// generator streams lineorder without holding it in memory.
#pragma once

#include "ssb/common/column_file.hpp"
#include "ssb/common/columnar_table.hpp"
#include "ssb/common/dictionary.hpp"
#include "ssb/common/manifest.hpp"
#include "ssb/common/schema.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace mqx::ssb {

// Dictionaries by column name; one per dictionary column of the table.
using DictionaryMap = std::map<std::string, Dictionary, std::less<>>;

class TableWriter {
public:
  // Throws DataError when a dictionary column of `table` has no dictionary.
  TableWriter(const std::filesystem::path &dataDir, TableId table, DictionaryMap dictionaries);

  // Appends one batch: `columns` in schema order, all of one length. Codes of
  // dictionary columns are range-checked, so a generator bug cannot produce a
  // directory whose codes decode to nothing.
  void append(std::span<const std::vector<std::int32_t>> columns);

  // Closes the column files, writes the dictionaries, and returns the entry
  // for the manifest.
  TableEntry finish();

private:
  std::filesystem::path dataDir_;
  const TableSchema &schema_;
  DictionaryMap dictionaries_;
  std::vector<Int32ColumnWriter> writers_;
  std::int64_t rows_ = 0;
};

// Writes a table that is wholly in memory.
TableEntry writeTable(const std::filesystem::path &dataDir, const ColumnarTable &table,
                      DictionaryMap dictionaries);

} // namespace mqx::ssb
