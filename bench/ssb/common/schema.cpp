#include "ssb/common/schema.hpp"

#include <array>

namespace mqx::ssb {
namespace {

constexpr std::array lineorderColumns{
    ColumnSchema{"lo_orderkey", false},      ColumnSchema{"lo_linenumber", false},
    ColumnSchema{"lo_custkey", false},       ColumnSchema{"lo_partkey", false},
    ColumnSchema{"lo_suppkey", false},       ColumnSchema{"lo_orderdate", false},
    ColumnSchema{"lo_orderpriority", true},  ColumnSchema{"lo_shippriority", false},
    ColumnSchema{"lo_quantity", false},      ColumnSchema{"lo_extendedprice", false},
    ColumnSchema{"lo_ordtotalprice", false}, ColumnSchema{"lo_discount", false},
    ColumnSchema{"lo_revenue", false},       ColumnSchema{"lo_supplycost", false},
    ColumnSchema{"lo_tax", false},           ColumnSchema{"lo_commitdate", false},
    ColumnSchema{"lo_shipmode", true},
};

constexpr std::array customerColumns{
    ColumnSchema{"c_custkey", false},   ColumnSchema{"c_city", true},
    ColumnSchema{"c_nation", true},     ColumnSchema{"c_region", true},
    ColumnSchema{"c_mktsegment", true},
};

constexpr std::array supplierColumns{
    ColumnSchema{"s_suppkey", false},
    ColumnSchema{"s_city", true},
    ColumnSchema{"s_nation", true},
    ColumnSchema{"s_region", true},
};

constexpr std::array partColumns{
    ColumnSchema{"p_partkey", false}, ColumnSchema{"p_mfgr", true},
    ColumnSchema{"p_category", true}, ColumnSchema{"p_brand1", true},
    ColumnSchema{"p_color", true},    ColumnSchema{"p_type", true},
    ColumnSchema{"p_size", false},    ColumnSchema{"p_container", true},
};

constexpr std::array dateColumns{
    ColumnSchema{"d_datekey", false},
    ColumnSchema{"d_dayofweek", true},
    ColumnSchema{"d_month", true},
    ColumnSchema{"d_year", false},
    ColumnSchema{"d_yearmonthnum", false},
    ColumnSchema{"d_yearmonth", true},
    ColumnSchema{"d_daynuminweek", false},
    ColumnSchema{"d_daynuminmonth", false},
    ColumnSchema{"d_daynuminyear", false},
    ColumnSchema{"d_monthnuminyear", false},
    ColumnSchema{"d_weeknuminyear", false},
    ColumnSchema{"d_sellingseason", true},
    ColumnSchema{"d_lastdayinweekfl", false},
    ColumnSchema{"d_lastdayinmonthfl", false},
    ColumnSchema{"d_holidayfl", false},
    ColumnSchema{"d_weekdayfl", false},
};

constexpr std::array<TableSchema, 5> tables{
    TableSchema{TableId::Lineorder, "lineorder", lineorderColumns},
    TableSchema{TableId::Customer, "customer", customerColumns},
    TableSchema{TableId::Supplier, "supplier", supplierColumns},
    TableSchema{TableId::Part, "part", partColumns},
    TableSchema{TableId::Date, "date", dateColumns},
};

} // namespace

std::optional<std::size_t> TableSchema::indexOf(std::string_view column) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == column)
      return i;
  return std::nullopt;
}

std::span<const TableSchema> ssbSchema() { return tables; }

const TableSchema &schemaOf(TableId table) { return tables[static_cast<std::size_t>(table)]; }

std::string_view tableName(TableId table) { return schemaOf(table).name; }

} // namespace mqx::ssb
