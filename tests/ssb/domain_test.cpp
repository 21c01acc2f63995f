// Value domains and derivations of the generated tables against the SSB
// specification (and dbgen where the specification leaves details open).
#include "ssb/datagen/domains.hpp"
#include "ssb/datagen/lineorder_table.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

namespace mqx::ssb {
namespace {

const SsbData &data() { return test::generatedDataset(0.05, 5).data; }

std::vector<std::int32_t> lineorder(std::string_view column) {
  return data().loadColumn(TableId::Lineorder, column);
}

std::vector<std::string> decoded(TableId table, std::string_view column) {
  Dictionary dictionary = data().loadDictionary(table, column);
  std::vector<std::string> values;
  for (std::int32_t code : data().loadColumn(table, column))
    values.push_back(dictionary.value(code));
  return values;
}

// Every value of [low, high] occurs, and nothing else.
void expectExactRange(const std::vector<std::int32_t> &values, std::int32_t low, std::int32_t high,
                      std::string_view what) {
  std::set<std::int32_t> seen(values.begin(), values.end());
  ASSERT_FALSE(seen.empty()) << what;
  EXPECT_EQ(*seen.begin(), low) << what;
  EXPECT_EQ(*seen.rbegin(), high) << what;
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(high - low + 1)) << what;
}

// Each value of [low, high] has frequency 1/(high - low + 1) within five
// binomial standard errors.
void expectUniform(const std::vector<std::int32_t> &values, std::int32_t low, std::int32_t high,
                   std::string_view what) {
  std::map<std::int32_t, std::int64_t> counts;
  for (std::int32_t v : values)
    ++counts[v];
  double n = static_cast<double>(values.size());
  double p = 1.0 / (high - low + 1);
  double tolerance = 5.0 * std::sqrt(p * (1 - p) / n);
  for (std::int32_t v = low; v <= high; ++v)
    EXPECT_NEAR(static_cast<double>(counts[v]) / n, p, tolerance) << what << " = " << v;
}

TEST(DomainTest, LineorderMeasuresCoverTheirSpecifiedDomains) {
  expectExactRange(lineorder("lo_quantity"), 1, 50, "lo_quantity");
  expectExactRange(lineorder("lo_discount"), 0, 10, "lo_discount");
  expectExactRange(lineorder("lo_tax"), 0, 8, "lo_tax");
  expectExactRange(lineorder("lo_linenumber"), 1, 7, "lo_linenumber");
  expectExactRange(lineorder("lo_shippriority"), 0, 0, "lo_shippriority");
  expectUniform(lineorder("lo_discount"), 0, 10, "lo_discount");
  expectUniform(lineorder("lo_quantity"), 1, 50, "lo_quantity");
}

TEST(DomainTest, LineorderStringsComeFromTheSpecifiedLists) {
  std::set<std::string> priorities;
  for (auto &value : decoded(TableId::Lineorder, "lo_orderpriority"))
    priorities.insert(value);
  EXPECT_EQ(priorities,
            (std::set<std::string>{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}));
  std::set<std::string> modes;
  for (auto &value : decoded(TableId::Lineorder, "lo_shipmode"))
    modes.insert(value);
  EXPECT_EQ(modes,
            (std::set<std::string>{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}));
}

TEST(DomainTest, PricesFollowDbgenIntegerArithmetic) {
  auto partkey = lineorder("lo_partkey"), quantity = lineorder("lo_quantity"),
       discount = lineorder("lo_discount"), tax = lineorder("lo_tax"),
       price = lineorder("lo_extendedprice"), revenue = lineorder("lo_revenue"),
       supplycost = lineorder("lo_supplycost"), total = lineorder("lo_ordtotalprice"),
       orderkey = lineorder("lo_orderkey");
  std::map<std::int32_t, std::int64_t> orderTotals;
  for (std::size_t i = 0; i < partkey.size(); ++i) {
    // TPC-H's retail price of part p, in cents, as a literal formula here.
    std::int64_t retail = 90000 + (partkey[i] / 10) % 20001 + 100 * (partkey[i] % 1000);
    ASSERT_EQ(price[i], retail * quantity[i]) << "row " << i;
    ASSERT_EQ(revenue[i], std::int64_t{price[i]} * (100 - discount[i]) / 100) << "row " << i;
    ASSERT_EQ(supplycost[i], 6 * retail / 10) << "row " << i;
    orderTotals[orderkey[i]] += std::int64_t{revenue[i]} * (100 + tax[i]) / 100;
  }
  for (std::size_t i = 0; i < total.size(); ++i)
    ASSERT_EQ(total[i], orderTotals[orderkey[i]]) << "row " << i;
}

TEST(DomainTest, ForeignKeysResolveAndDatesStayInRange) {
  std::int64_t customers = data().rows(TableId::Customer);
  std::int64_t suppliers = data().rows(TableId::Supplier);
  std::int64_t parts = data().rows(TableId::Part);
  auto datekeys = data().loadColumn(TableId::Date, "d_datekey");
  std::map<std::int32_t, int> dayIndex;
  for (std::size_t i = 0; i < datekeys.size(); ++i)
    dayIndex[datekeys[i]] = static_cast<int>(i);
  auto custkey = lineorder("lo_custkey"), suppkey = lineorder("lo_suppkey"),
       partkey = lineorder("lo_partkey"), orderdate = lineorder("lo_orderdate"),
       commitdate = lineorder("lo_commitdate");
  std::int32_t latestOrder = 0;
  for (std::size_t i = 0; i < custkey.size(); ++i) {
    ASSERT_TRUE(custkey[i] >= 1 && custkey[i] <= customers) << custkey[i];
    // TPC-H's customer mortality: a third of the customers never order.
    ASSERT_NE(custkey[i] % 3, 0) << custkey[i];
    ASSERT_TRUE(suppkey[i] >= 1 && suppkey[i] <= suppliers) << suppkey[i];
    ASSERT_TRUE(partkey[i] >= 1 && partkey[i] <= parts) << partkey[i];
    ASSERT_TRUE(dayIndex.contains(orderdate[i])) << orderdate[i];
    ASSERT_TRUE(dayIndex.contains(commitdate[i])) << commitdate[i];
    int delay = dayIndex[commitdate[i]] - dayIndex[orderdate[i]];
    ASSERT_TRUE(delay >= 30 && delay <= 90) << delay;
    latestOrder = std::max(latestOrder, orderdate[i]);
  }
  EXPECT_LE(latestOrder, 19980802);
  EXPECT_GE(latestOrder, 19980701); // the range's end is reached at this size
}

TEST(DomainTest, OrdersAreDbgenSparseKeysWithSharedOrderAttributes) {
  auto orderkey = lineorder("lo_orderkey"), linenumber = lineorder("lo_linenumber"),
       custkey = lineorder("lo_custkey"), orderdate = lineorder("lo_orderdate"),
       priority = lineorder("lo_orderpriority");
  std::int64_t orderNumber = 0;
  for (std::size_t i = 0; i < orderkey.size(); ++i) {
    if (linenumber[i] == 1) {
      ++orderNumber;
      // 8 keys used of every 32: 1..7, 32..39, 64..71, ...
      ASSERT_EQ(orderkey[i], ((orderNumber >> 3) << 5) | (orderNumber & 7)) << "row " << i;
      continue;
    }
    ASSERT_EQ(linenumber[i], linenumber[i - 1] + 1) << "row " << i;
    ASSERT_EQ(orderkey[i], orderkey[i - 1]);
    ASSERT_EQ(custkey[i], custkey[i - 1]);
    ASSERT_EQ(orderdate[i], orderdate[i - 1]);
    ASSERT_EQ(priority[i], priority[i - 1]);
  }
}

void expectSpecGeography(TableId table, std::string_view prefix) {
  std::string p(prefix);
  auto city = decoded(table, p + "_city"), nation = decoded(table, p + "_nation"),
       region = decoded(table, p + "_region");
  std::map<std::string, std::string> regionOfNation;
  for (const Nation &n : nations())
    regionOfNation[std::string(n.name)] =
        std::string(regionNames()[static_cast<std::size_t>(n.region)]);
  for (std::size_t i = 0; i < city.size(); ++i) {
    ASSERT_EQ(region[i], regionOfNation.at(nation[i])) << nation[i];
    std::string prefix9 = nation[i].substr(0, 9);
    prefix9.resize(9, ' ');
    ASSERT_EQ(city[i].size(), 10u) << city[i];
    ASSERT_EQ(city[i].substr(0, 9), prefix9) << city[i];
    ASSERT_TRUE(std::isdigit(static_cast<unsigned char>(city[i][9]))) << city[i];
  }
  EXPECT_EQ(data().loadDictionary(table, p + "_city").size(), 250);
  EXPECT_EQ(data().loadDictionary(table, p + "_nation").size(), 25);
  EXPECT_EQ(data().loadDictionary(table, p + "_region").size(), 5);
}

TEST(DomainTest, CustomerAndSupplierGeographyFollowsTheSpecification) {
  expectSpecGeography(TableId::Customer, "c");
  expectSpecGeography(TableId::Supplier, "s");
  Dictionary cities = data().loadDictionary(TableId::Customer, "c_city");
  for (std::string_view city : {"UNITED KI1", "UNITED KI5", "UNITED ST0", "PERU     9"})
    EXPECT_TRUE(cities.find(city).has_value()) << city;
  // The TPC-H nation-to-region map, spot-checked literally.
  std::map<std::string_view, std::string_view> spot{{"UNITED STATES", "AMERICA"},
                                                    {"UNITED KINGDOM", "EUROPE"},
                                                    {"CHINA", "ASIA"},
                                                    {"EGYPT", "MIDDLE EAST"},
                                                    {"KENYA", "AFRICA"}};
  for (const Nation &n : nations())
    if (spot.contains(n.name)) {
      EXPECT_EQ(regionNames()[static_cast<std::size_t>(n.region)], spot[n.name]);
    }
  std::map<int, int> nationsPerRegion;
  for (const Nation &n : nations())
    ++nationsPerRegion[n.region];
  for (auto [region, count] : nationsPerRegion)
    EXPECT_EQ(count, 5) << region;
}

TEST(DomainTest, PartHierarchyFollowsTheSpecification) {
  auto mfgr = decoded(TableId::Part, "p_mfgr"), category = decoded(TableId::Part, "p_category"),
       brand = decoded(TableId::Part, "p_brand1");
  for (std::size_t i = 0; i < mfgr.size(); ++i) {
    ASSERT_EQ(mfgr[i].size(), 6u);
    ASSERT_EQ(mfgr[i].substr(0, 5), "MFGR#");
    ASSERT_TRUE(mfgr[i][5] >= '1' && mfgr[i][5] <= '5') << mfgr[i];
    ASSERT_EQ(category[i].substr(0, 6), mfgr[i]);
    ASSERT_TRUE(category[i].size() == 7 && category[i][6] >= '1' && category[i][6] <= '5');
    ASSERT_EQ(brand[i].substr(0, 7), category[i]);
    ASSERT_EQ(brand[i].size(), 9u) << brand[i];
    int number = std::stoi(brand[i].substr(7));
    ASSERT_TRUE(number >= 1 && number <= 40) << brand[i];
  }
  Dictionary brands = data().loadDictionary(TableId::Part, "p_brand1");
  EXPECT_EQ(brands.size(), 1000);
  EXPECT_EQ(brands.values().front(), "MFGR#1101");
  EXPECT_EQ(brands.values().back(), "MFGR#5540");
  EXPECT_EQ(data().loadDictionary(TableId::Part, "p_category").size(), 25);
  EXPECT_EQ(data().loadDictionary(TableId::Part, "p_mfgr").size(), 5);
  expectExactRange(data().loadColumn(TableId::Part, "p_size"), 1, 50, "p_size");
  EXPECT_EQ(data().loadDictionary(TableId::Part, "p_color").size(), 92);
  EXPECT_EQ(data().loadDictionary(TableId::Part, "p_type").size(), 150);
  EXPECT_EQ(data().loadDictionary(TableId::Part, "p_container").size(), 40);
}

TEST(DomainTest, DimensionKeysAreDenseAndAttributesUniform) {
  for (auto [table, key] :
       {std::pair{TableId::Customer, "c_custkey"}, std::pair{TableId::Supplier, "s_suppkey"},
        std::pair{TableId::Part, "p_partkey"}}) {
    auto keys = data().loadColumn(table, key);
    for (std::size_t i = 0; i < keys.size(); ++i)
      ASSERT_EQ(keys[i], static_cast<std::int32_t>(i + 1));
  }
  expectUniform(data().loadColumn(TableId::Customer, "c_region"), 0, 4, "c_region");
  expectUniform(data().loadColumn(TableId::Part, "p_mfgr"), 0, 4, "p_mfgr");
  expectUniform(data().loadColumn(TableId::Part, "p_category"), 0, 24, "p_category");
}

} // namespace
} // namespace mqx::ssb
