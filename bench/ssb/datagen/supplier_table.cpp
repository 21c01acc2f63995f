#include "ssb/datagen/supplier_table.hpp"

#include "ssb/datagen/geography.hpp"

namespace mqx::ssb {

GeneratedTable generateSupplierTable(std::int64_t rows, std::uint64_t seed) {
  GeographyDrawer geography;
  Rng rng(seed, static_cast<std::uint64_t>(RngStream::Supplier));

  ColumnarTable table(TableId::Supplier);
  for (auto &column : table.columns)
    column.reserve(static_cast<std::size_t>(rows));
  auto &suppkey = table.column("s_suppkey");
  auto &city = table.column("s_city");
  auto &nation = table.column("s_nation");
  auto &region = table.column("s_region");
  for (std::int64_t key = 1; key <= rows; ++key) {
    GeographyCodes place = geography.draw(rng);
    suppkey.push_back(static_cast<std::int32_t>(key));
    city.push_back(place.city);
    nation.push_back(place.nation);
    region.push_back(place.region);
  }
  DictionaryMap dictionaries;
  geography.addDictionaries(dictionaries, "s");
  return GeneratedTable{std::move(table), std::move(dictionaries)};
}

} // namespace mqx::ssb
