#include "ssb/datagen/customer_table.hpp"

#include "ssb/datagen/geography.hpp"

namespace mqx::ssb {

GeneratedTable generateCustomerTable(std::int64_t rows, std::uint64_t seed) {
  GeographyDrawer geography;
  EncodedDomain segments = marketSegmentDomain();
  Rng rng(seed, static_cast<std::uint64_t>(RngStream::Customer));

  ColumnarTable table = reservedTable(TableId::Customer, rows);
  auto &custkey = table.column("c_custkey");
  AddressColumns address(table, "c");
  auto &segment = table.column("c_mktsegment");
  for (std::int64_t key = 1; key <= rows; ++key) {
    custkey.push_back(static_cast<std::int32_t>(key));
    address.push_back(geography.draw(rng));
    segment.push_back(drawCode(rng, segments));
  }
  DictionaryMap dictionaries{{"c_mktsegment", segments.dictionary}};
  geography.addDictionaries(dictionaries, "c");
  return GeneratedTable{std::move(table), std::move(dictionaries)};
}

} // namespace mqx::ssb
