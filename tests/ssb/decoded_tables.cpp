#include "decoded_tables.hpp"

namespace mqx::ssb::test {
namespace {

// Decodes a dictionary column into its strings.
std::vector<std::string> strings(const ColumnSource &source, TableId table,
                                 std::string_view column) {
  Dictionary dictionary = source.dictionary(table, column);
  std::vector<std::string> values;
  for (std::int32_t code : source.column(table, column))
    values.push_back(dictionary.value(code));
  return values;
}

std::vector<DateRow> decodeDates(const ColumnSource &source) {
  auto key = source.column(TableId::Date, "d_datekey");
  auto year = source.column(TableId::Date, "d_year");
  auto yearmonthnum = source.column(TableId::Date, "d_yearmonthnum");
  auto week = source.column(TableId::Date, "d_weeknuminyear");
  auto yearmonth = strings(source, TableId::Date, "d_yearmonth");
  std::vector<DateRow> rows;
  for (std::size_t i = 0; i < key.size(); ++i)
    rows.push_back({key[i], year[i], yearmonthnum[i], week[i], yearmonth[i]});
  return rows;
}

template <class Row>
std::vector<Row> decodePlaces(const ColumnSource &source, TableId table, std::string_view prefix) {
  std::string p(prefix);
  auto key = source.column(table, p + (prefix == "c" ? "_custkey" : "_suppkey"));
  auto city = strings(source, table, p + "_city");
  auto nation = strings(source, table, p + "_nation");
  auto region = strings(source, table, p + "_region");
  std::vector<Row> rows;
  for (std::size_t i = 0; i < key.size(); ++i)
    rows.push_back({key[i], city[i], nation[i], region[i]});
  return rows;
}

std::vector<PartRow> decodeParts(const ColumnSource &source) {
  auto key = source.column(TableId::Part, "p_partkey");
  auto mfgr = strings(source, TableId::Part, "p_mfgr");
  auto category = strings(source, TableId::Part, "p_category");
  auto brand = strings(source, TableId::Part, "p_brand1");
  std::vector<PartRow> rows;
  for (std::size_t i = 0; i < key.size(); ++i)
    rows.push_back({key[i], mfgr[i], category[i], brand[i]});
  return rows;
}

std::vector<LineorderRow> decodeLineorder(const ColumnSource &source) {
  auto col = [&](std::string_view name) { return source.column(TableId::Lineorder, name); };
  auto custkey = col("lo_custkey"), partkey = col("lo_partkey"), suppkey = col("lo_suppkey"),
       orderdate = col("lo_orderdate"), quantity = col("lo_quantity"),
       discount = col("lo_discount"), price = col("lo_extendedprice"), revenue = col("lo_revenue"),
       supplycost = col("lo_supplycost");
  std::vector<LineorderRow> rows(custkey.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i] = {custkey[i],  partkey[i], suppkey[i], orderdate[i], quantity[i],
               discount[i], price[i],   revenue[i], supplycost[i]};
  return rows;
}

} // namespace

ColumnSource sourceOf(const SsbData &data) {
  return ColumnSource{
      [&data](TableId table, std::string_view column) { return data.loadColumn(table, column); },
      [&data](TableId table, std::string_view column) {
        return data.loadDictionary(table, column);
      }};
}

DecodedTables decodeTables(const ColumnSource &source) {
  return DecodedTables{decodeLineorder(source),
                       decodePlaces<CustomerRow>(source, TableId::Customer, "c"),
                       decodePlaces<SupplierRow>(source, TableId::Supplier, "s"),
                       decodeParts(source), decodeDates(source)};
}

} // namespace mqx::ssb::test
