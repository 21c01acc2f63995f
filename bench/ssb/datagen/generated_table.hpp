// A dimension table as the generator produces it: the columns in memory and
// the dictionaries their codes refer to, ready for writeTable().
#pragma once

#include "ssb/common/columnar_table.hpp"
#include "ssb/common/table_writer.hpp"

#include <cstdint>

namespace mqx::ssb {

struct GeneratedTable {
  ColumnarTable table;
  DictionaryMap dictionaries;
};

// An empty table of `id` with room for `rows` rows in every column.
inline ColumnarTable reservedTable(TableId id, std::int64_t rows) {
  ColumnarTable table(id);
  for (auto &column : table.columns)
    column.reserve(static_cast<std::size_t>(rows));
  return table;
}

} // namespace mqx::ssb
