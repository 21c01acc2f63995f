// The SSB schema as stored by mqx: which tables exist, which columns each has
// in which order, and which of them are dictionary-encoded strings.
//
// Every stored column is a little-endian int32 per row. Strings that the 13
// queries select or group on (and the other low-cardinality strings of the
// specification) are stored as int32 codes into a sorted dictionary, so that
// code order is string order and range predicates stay range predicates.
// Free-text columns the queries never read (names, addresses, phones, d_date)
// are not stored at all: they would only cost disk and load time.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace mqx::ssb {

enum class TableId { Lineorder, Customer, Supplier, Part, Date };

struct ColumnSchema {
  std::string_view name;
  bool dictionary; // int32 codes into <column>.dict when true
};

struct TableSchema {
  TableId id;
  std::string_view name;
  std::span<const ColumnSchema> columns;

  // Position of a column in `columns`, or nullopt.
  std::optional<std::size_t> indexOf(std::string_view column) const;
};

// The five tables in a fixed order: lineorder first, then the dimensions.
std::span<const TableSchema> ssbSchema();
const TableSchema &schemaOf(TableId table);
std::string_view tableName(TableId table);

} // namespace mqx::ssb
