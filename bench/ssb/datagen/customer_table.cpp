#include "ssb/datagen/customer_table.hpp"

#include "ssb/datagen/geography.hpp"

namespace mqx::ssb {

GeneratedTable generateCustomerTable(std::int64_t rows, std::uint64_t seed) {
  GeographyDrawer geography;
  EncodedDomain segments = marketSegmentDomain();
  Rng rng(seed, static_cast<std::uint64_t>(RngStream::Customer));

  ColumnarTable table(TableId::Customer);
  for (auto &column : table.columns)
    column.reserve(static_cast<std::size_t>(rows));
  auto &custkey = table.column("c_custkey");
  auto &city = table.column("c_city");
  auto &nation = table.column("c_nation");
  auto &region = table.column("c_region");
  auto &segment = table.column("c_mktsegment");
  for (std::int64_t key = 1; key <= rows; ++key) {
    GeographyCodes place = geography.draw(rng);
    custkey.push_back(static_cast<std::int32_t>(key));
    city.push_back(place.city);
    nation.push_back(place.nation);
    region.push_back(place.region);
    segment.push_back(segments.code(static_cast<std::size_t>(rng.uniform(0, segments.size() - 1))));
  }
  DictionaryMap dictionaries{{"c_mktsegment", segments.dictionary}};
  geography.addDictionaries(dictionaries, "c");
  return GeneratedTable{std::move(table), std::move(dictionaries)};
}

} // namespace mqx::ssb
