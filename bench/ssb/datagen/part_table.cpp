#include "ssb/datagen/part_table.hpp"

#include "ssb/datagen/domains.hpp"
#include "ssb/datagen/rng.hpp"

namespace mqx::ssb {

GeneratedTable generatePartTable(std::int64_t rows, std::uint64_t seed) {
  EncodedDomain mfgrs = mfgrDomain();
  EncodedDomain categories = categoryDomain();
  EncodedDomain brands = brandDomain();
  EncodedDomain colors = colorDomain();
  EncodedDomain types = partTypeDomain();
  EncodedDomain containers = containerDomain();
  Rng rng(seed, static_cast<std::uint64_t>(RngStream::Part));

  ColumnarTable table = reservedTable(TableId::Part, rows);
  auto &partkey = table.column("p_partkey");
  auto &mfgrColumn = table.column("p_mfgr");
  auto &categoryColumn = table.column("p_category");
  auto &brandColumn = table.column("p_brand1");
  auto &colorColumn = table.column("p_color");
  auto &typeColumn = table.column("p_type");
  auto &sizeColumn = table.column("p_size");
  auto &containerColumn = table.column("p_container");
  for (std::int64_t key = 1; key <= rows; ++key) {
    int mfgr = rng.uniform(0, kMfgrCount - 1);
    int category = mfgr * kCategoriesPerMfgr + rng.uniform(0, kCategoriesPerMfgr - 1);
    int brand = category * kBrandsPerCategory + rng.uniform(0, kBrandsPerCategory - 1);
    partkey.push_back(static_cast<std::int32_t>(key));
    mfgrColumn.push_back(mfgrs.code(static_cast<std::size_t>(mfgr)));
    categoryColumn.push_back(categories.code(static_cast<std::size_t>(category)));
    brandColumn.push_back(brands.code(static_cast<std::size_t>(brand)));
    colorColumn.push_back(drawCode(rng, colors));
    typeColumn.push_back(drawCode(rng, types));
    sizeColumn.push_back(rng.uniform(1, 50));
    containerColumn.push_back(drawCode(rng, containers));
  }
  return GeneratedTable{
      std::move(table),
      DictionaryMap{{"p_mfgr", std::move(mfgrs.dictionary)},
                    {"p_category", std::move(categories.dictionary)},
                    {"p_brand1", std::move(brands.dictionary)},
                    {"p_color", std::move(colors.dictionary)},
                    {"p_type", std::move(types.dictionary)},
                    {"p_container", std::move(containers.dictionary)}},
  };
}

} // namespace mqx::ssb
