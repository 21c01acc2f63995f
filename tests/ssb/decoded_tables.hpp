// The SSB tables decoded into plain rows with string attributes, the form
// the tests' independent checks work on: they compare strings as SQL does
// instead of dictionary codes, so they do not share the reference's (or the
// generator's) encoding logic.
#pragma once

#include "ssb/common/dictionary.hpp"
#include "ssb/common/schema.hpp"
#include "ssb/common/ssb_data.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb::test {

struct DateRow {
  std::int32_t datekey, year, yearmonthnum, weeknuminyear;
  std::string yearmonth;
};

struct CustomerRow {
  std::int32_t custkey;
  std::string city, nation, region;
};

struct SupplierRow {
  std::int32_t suppkey;
  std::string city, nation, region;
};

struct PartRow {
  std::int32_t partkey;
  std::string mfgr, category, brand1;
};

struct LineorderRow {
  std::int32_t custkey, partkey, suppkey, orderdate;
  std::int32_t quantity, discount, extendedprice, revenue, supplycost;
};

struct DecodedTables {
  std::vector<LineorderRow> lineorder;
  std::vector<CustomerRow> customers;
  std::vector<SupplierRow> suppliers;
  std::vector<PartRow> parts;
  std::vector<DateRow> dates;
};

// Where decodeTables reads from: a data directory, or tables in memory.
struct ColumnSource {
  std::function<std::vector<std::int32_t>(TableId, std::string_view)> column;
  std::function<Dictionary(TableId, std::string_view)> dictionary;
};

ColumnSource sourceOf(const SsbData &data);
DecodedTables decodeTables(const ColumnSource &source);

} // namespace mqx::ssb::test
