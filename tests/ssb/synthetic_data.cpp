#include "synthetic_data.hpp"

#include "ssb/common/manifest.hpp"
#include "ssb/common/table_writer.hpp"
#include "ssb/datagen/date_table.hpp"
#include "ssb/datagen/domains.hpp"

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

namespace mqx::ssb::test {
namespace {

constexpr std::size_t kCustomers = 40;
constexpr std::size_t kSuppliers = 30;
constexpr std::size_t kParts = 60;
constexpr std::size_t kLineorders = 12000;

// Cities around the queries' constants: both UK cities of Q3.3/Q3.4 and a
// third one that is not selected, US cities, and cities in other regions.
constexpr std::array<std::string_view, 10> kCities{
    "UNITED KI1", "UNITED KI5", "UNITED KI3", "UNITED ST0", "UNITED ST7",
    "CHINA    1", "JAPAN    4", "BRAZIL   2", "CANADA   9", "PERU     5"};

// Brands around flight 2's and Q4.3's constants, in several manufacturers.
constexpr std::array<std::string_view, 14> kBrands{
    "MFGR#1201", "MFGR#1240", "MFGR#1402", "MFGR#1433", "MFGR#2220", "MFGR#2221", "MFGR#2225",
    "MFGR#2228", "MFGR#2229", "MFGR#2239", "MFGR#2240", "MFGR#1101", "MFGR#3101", "MFGR#5540"};

struct Place {
  std::string city, nation, region;
};

Place placeOfCity(std::string_view city) {
  for (std::size_t n = 0; n < nations().size(); ++n)
    for (int digit = 0; digit < kCitiesPerNation; ++digit)
      if (cityName(static_cast<int>(n), digit) == city)
        return Place{std::string(city), std::string(nations()[n].name),
                     std::string(regionNames()[static_cast<std::size_t>(nations()[n].region)])};
  return {};
}

// Keys 7, 10, 13, ... in shuffled row order: not dense, not sorted.
std::vector<std::int32_t> sparseKeys(std::size_t count, std::mt19937_64 &rng) {
  std::vector<std::int32_t> keys;
  for (std::size_t i = 0; i < count; ++i)
    keys.push_back(static_cast<std::int32_t>(7 + 3 * i));
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

template <class T> const T &pick(const std::vector<T> &values, std::mt19937_64 &rng) {
  return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)];
}

int uniform(int low, int high, std::mt19937_64 &rng) {
  return std::uniform_int_distribution<int>(low, high)(rng);
}

TableEntry writePlaces(const std::filesystem::path &dir, TableId table, std::string_view prefix,
                       const std::vector<std::int32_t> &keys, std::mt19937_64 &rng) {
  EncodedDomain cities = cityDomain(), nationCodes = nationDomain(), regions = regionDomain();
  ColumnarTable columns(table);
  std::string p(prefix);
  for (std::int32_t key : keys) {
    Place place =
        placeOfCity(kCities[static_cast<std::size_t>(uniform(0, kCities.size() - 1, rng))]);
    columns.column(p + (prefix == "c" ? "_custkey" : "_suppkey")).push_back(key);
    columns.column(p + "_city").push_back(cities.dictionary.code(place.city));
    columns.column(p + "_nation").push_back(nationCodes.dictionary.code(place.nation));
    columns.column(p + "_region").push_back(regions.dictionary.code(place.region));
  }
  DictionaryMap dictionaries{{p + "_city", cities.dictionary},
                             {p + "_nation", nationCodes.dictionary},
                             {p + "_region", regions.dictionary}};
  if (prefix == "c") {
    EncodedDomain segments = marketSegmentDomain();
    columns.column("c_mktsegment").assign(keys.size(), 0);
    dictionaries.emplace("c_mktsegment", segments.dictionary);
  }
  return writeTable(dir, columns, std::move(dictionaries));
}

TableEntry writeParts(const std::filesystem::path &dir, const std::vector<std::int32_t> &keys,
                      std::mt19937_64 &rng) {
  EncodedDomain mfgrs = mfgrDomain(), categories = categoryDomain(), brands = brandDomain();
  ColumnarTable columns(TableId::Part);
  for (std::int32_t key : keys) {
    std::string brand(kBrands[static_cast<std::size_t>(uniform(0, kBrands.size() - 1, rng))]);
    columns.column("p_partkey").push_back(key);
    columns.column("p_mfgr").push_back(mfgrs.dictionary.code(brand.substr(0, 6)));
    columns.column("p_category").push_back(categories.dictionary.code(brand.substr(0, 7)));
    columns.column("p_brand1").push_back(brands.dictionary.code(brand));
  }
  for (std::string_view name : {"p_color", "p_type", "p_size", "p_container"})
    columns.column(name).assign(keys.size(), 0);
  return writeTable(dir, columns,
                    DictionaryMap{{"p_mfgr", mfgrs.dictionary},
                                  {"p_category", categories.dictionary},
                                  {"p_brand1", brands.dictionary},
                                  {"p_color", colorDomain().dictionary},
                                  {"p_type", partTypeDomain().dictionary},
                                  {"p_container", containerDomain().dictionary}});
}

// Order dates: half from the queries' ranges and their edges, half anywhere.
std::vector<std::int32_t> orderDatePool(const ColumnarTable &dates) {
  const auto &keys = dates.column("d_datekey");
  std::vector<std::int32_t> pool;
  for (std::int32_t key : keys) {
    bool hot = (key >= 19930101 && key <= 19931231) || (key >= 19940101 && key <= 19940215) ||
               (key >= 19971125 && key <= 19980110) || key == 19920101;
    if (hot)
      pool.push_back(key);
  }
  return pool;
}

TableEntry writeLineorder(const std::filesystem::path &dir, const ColumnarTable &dates,
                          const std::vector<std::int32_t> &custkeys,
                          const std::vector<std::int32_t> &suppkeys,
                          const std::vector<std::int32_t> &partkeys, std::mt19937_64 &rng) {
  std::vector<std::int32_t> hotDates = orderDatePool(dates);
  const auto &allDates = dates.column("d_datekey");
  ColumnarTable lo(TableId::Lineorder);
  // About 1 row in 50 carries a key that no dimension row has.
  auto foreignKey = [&](const std::vector<std::int32_t> &keys) {
    return uniform(0, 49, rng) == 0 ? 1'000'000 + uniform(0, 9, rng) : pick(keys, rng);
  };
  for (std::size_t i = 0; i < kLineorders; ++i) {
    std::int32_t quantity = uniform(1, 50, rng), discount = uniform(0, 10, rng);
    std::int32_t price = uniform(90000, 210000, rng);
    std::int32_t extended = quantity * price;
    lo.column("lo_orderkey").push_back(static_cast<std::int32_t>(i / 4 + 1));
    lo.column("lo_linenumber").push_back(static_cast<std::int32_t>(i % 4 + 1));
    lo.column("lo_custkey").push_back(foreignKey(custkeys));
    lo.column("lo_partkey").push_back(foreignKey(partkeys));
    lo.column("lo_suppkey").push_back(foreignKey(suppkeys));
    lo.column("lo_orderdate")
        .push_back(uniform(0, 1, rng) ? pick(hotDates, rng) : pick(allDates, rng));
    lo.column("lo_quantity").push_back(quantity);
    lo.column("lo_discount").push_back(discount);
    lo.column("lo_extendedprice").push_back(extended);
    lo.column("lo_revenue").push_back(extended / 100 * (100 - discount));
    lo.column("lo_supplycost").push_back(price * 6 / 10 + uniform(-5000, 5000, rng));
  }
  for (std::string_view name : {"lo_orderpriority", "lo_shippriority", "lo_ordtotalprice", "lo_tax",
                                "lo_commitdate", "lo_shipmode"})
    lo.column(name).assign(kLineorders, 0);
  return writeTable(dir, lo,
                    DictionaryMap{{"lo_orderpriority", orderPriorityDomain().dictionary},
                                  {"lo_shipmode", shipModeDomain().dictionary}});
}

} // namespace

void writeSyntheticData(const std::filesystem::path &dir, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  GeneratedTable dates = generateDateTable();
  std::vector<std::int32_t> custkeys = sparseKeys(kCustomers, rng);
  std::vector<std::int32_t> suppkeys = sparseKeys(kSuppliers, rng);
  std::vector<std::int32_t> partkeys = sparseKeys(kParts, rng);

  Manifest manifest;
  manifest.scaleFactor = 0;
  manifest.seed = seed;
  manifest.generator = "mqx ssb synthetic test data";
  manifest.tables.push_back(writeLineorder(dir, dates.table, custkeys, suppkeys, partkeys, rng));
  manifest.tables.push_back(writePlaces(dir, TableId::Customer, "c", custkeys, rng));
  manifest.tables.push_back(writePlaces(dir, TableId::Supplier, "s", suppkeys, rng));
  manifest.tables.push_back(writeParts(dir, partkeys, rng));
  manifest.tables.push_back(writeTable(dir, dates.table, std::move(dates.dictionaries)));
  writeManifest(dir, manifest);
}

} // namespace mqx::ssb::test
