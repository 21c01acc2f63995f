#include "ssb/datagen/supplier_table.hpp"

#include "ssb/datagen/geography.hpp"

namespace mqx::ssb {

GeneratedTable generateSupplierTable(std::int64_t rows, std::uint64_t seed) {
  GeographyDrawer geography;
  Rng rng(seed, static_cast<std::uint64_t>(RngStream::Supplier));

  ColumnarTable table = reservedTable(TableId::Supplier, rows);
  auto &suppkey = table.column("s_suppkey");
  AddressColumns address(table, "s");
  for (std::int64_t key = 1; key <= rows; ++key) {
    suppkey.push_back(static_cast<std::int32_t>(key));
    address.push_back(geography.draw(rng));
  }
  DictionaryMap dictionaries;
  geography.addDictionaries(dictionaries, "s");
  return GeneratedTable{std::move(table), std::move(dictionaries)};
}

} // namespace mqx::ssb
