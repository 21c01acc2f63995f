// A whole table held in host memory, one int32 vector per column in schema
// order. The generator builds the dimension tables this way before writing
// them, and tests build small synthetic tables with it.
#pragma once

#include "ssb/common/error.hpp"
#include "ssb/common/schema.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb {

struct ColumnarTable {
  TableId table;
  std::vector<std::vector<std::int32_t>> columns;

  explicit ColumnarTable(TableId id) : table(id), columns(schemaOf(id).columns.size()) {}

  std::vector<std::int32_t> &column(std::string_view name) { return columns[indexOrThrow(name)]; }
  const std::vector<std::int32_t> &column(std::string_view name) const {
    return columns[indexOrThrow(name)];
  }
  std::int64_t rows() const {
    return columns.empty() ? 0 : static_cast<std::int64_t>(columns.front().size());
  }

private:
  std::size_t indexOrThrow(std::string_view name) const {
    if (auto index = schemaOf(table).indexOf(name))
      return *index;
    throw DataError(std::string(tableName(table)) + " has no column " + std::string(name));
  }
};

} // namespace mqx::ssb
