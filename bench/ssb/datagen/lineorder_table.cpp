#include "ssb/datagen/lineorder_table.hpp"

#include "ssb/common/schema.hpp"
#include "ssb/datagen/calendar.hpp"
#include "ssb/datagen/domains.hpp"
#include "ssb/datagen/rng.hpp"

#include <algorithm>

namespace mqx::ssb {
namespace {

constexpr int kMaxLinesPerOrder = 7;
constexpr int kCustomerMortality = 3;

// Column positions in the lineorder schema, resolved once.
struct Columns {
  std::size_t orderkey, linenumber, custkey, partkey, suppkey, orderdate, orderpriority,
      shippriority, quantity, extendedprice, ordtotalprice, discount, revenue, supplycost, tax,
      commitdate, shipmode;

  Columns() {
    const TableSchema &s = schemaOf(TableId::Lineorder);
    orderkey = *s.indexOf("lo_orderkey");
    linenumber = *s.indexOf("lo_linenumber");
    custkey = *s.indexOf("lo_custkey");
    partkey = *s.indexOf("lo_partkey");
    suppkey = *s.indexOf("lo_suppkey");
    orderdate = *s.indexOf("lo_orderdate");
    orderpriority = *s.indexOf("lo_orderpriority");
    shippriority = *s.indexOf("lo_shippriority");
    quantity = *s.indexOf("lo_quantity");
    extendedprice = *s.indexOf("lo_extendedprice");
    ordtotalprice = *s.indexOf("lo_ordtotalprice");
    discount = *s.indexOf("lo_discount");
    revenue = *s.indexOf("lo_revenue");
    supplycost = *s.indexOf("lo_supplycost");
    tax = *s.indexOf("lo_tax");
    commitdate = *s.indexOf("lo_commitdate");
    shipmode = *s.indexOf("lo_shipmode");
  }
};

const Columns &columnsOf() {
  static const Columns columns;
  return columns;
}

} // namespace

LineorderGenerator::LineorderGenerator(const LineorderParameters &parameters)
    : parameters_(parameters) {
  for (int day = 0; day < kOrderDateDays + kCommitDelayMax; ++day)
    datekeys_.push_back(datekeyOf(day));
  EncodedDomain priorities = orderPriorityDomain();
  EncodedDomain shipModes = shipModeDomain();
  priorityCodes_ = priorities.codes;
  shipModeCodes_ = shipModes.codes;
  dictionaries_.emplace("lo_orderpriority", std::move(priorities.dictionary));
  dictionaries_.emplace("lo_shipmode", std::move(shipModes.dictionary));
}

std::int64_t LineorderGenerator::chunkCount() const {
  return (parameters_.orders + kOrdersPerChunk - 1) / kOrdersPerChunk;
}

DictionaryMap LineorderGenerator::dictionaries() const { return dictionaries_; }

// dbgen gives no order to a customer whose key is a multiple of 3 (TPC-H's
// CUST_MORTALITY: a third of the customers never order); such a draw moves to
// the next key, or to the previous one at the end of the key range.
std::int32_t LineorderGenerator::drawCustomer(Rng &rng) const {
  auto customers = static_cast<std::int32_t>(parameters_.customers);
  std::int32_t key = rng.uniform(1, customers);
  if (key % kCustomerMortality == 0)
    key = key < customers ? key + 1 : std::max(1, key - 1);
  return key;
}

void LineorderGenerator::generateChunk(std::int64_t chunk,
                                       std::vector<std::vector<std::int32_t>> &columns) const {
  const Columns &c = columnsOf();
  std::int64_t first = chunk * kOrdersPerChunk;
  std::int64_t last = std::min(parameters_.orders, first + kOrdersPerChunk);
  columns.resize(schemaOf(TableId::Lineorder).columns.size());
  for (auto &column : columns) {
    column.clear();
    column.reserve(static_cast<std::size_t>((last - first) * kMaxLinesPerOrder));
  }
  Rng rng(parameters_.seed, static_cast<std::uint64_t>(RngStream::LineorderChunk0) +
                                static_cast<std::uint64_t>(chunk));
  auto suppliers = static_cast<std::int32_t>(parameters_.suppliers);
  auto parts = static_cast<std::int32_t>(parameters_.parts);
  auto priorityCount = static_cast<std::int32_t>(priorityCodes_.size());
  auto shipModeCount = static_cast<std::int32_t>(shipModeCodes_.size());

  for (std::int64_t order = first; order < last; ++order) {
    std::int32_t orderkey = orderKeyOf(order + 1);
    int orderDay = rng.uniform(0, kOrderDateDays - 1);
    std::int32_t custkey = drawCustomer(rng);
    std::int32_t priority =
        priorityCodes_[static_cast<std::size_t>(rng.uniform(0, priorityCount - 1))];
    int lines = rng.uniform(1, kMaxLinesPerOrder);
    std::size_t orderStart = columns[c.orderkey].size();
    std::int64_t totalPrice = 0;
    for (int line = 1; line <= lines; ++line) {
      std::int32_t partkey = rng.uniform(1, parts);
      std::int32_t suppkey = rng.uniform(1, suppliers);
      std::int32_t quantity = rng.uniform(1, 50);
      std::int32_t discount = rng.uniform(0, 10);
      std::int32_t tax = rng.uniform(0, 8);
      int commitDay = orderDay + rng.uniform(kCommitDelayMin, kCommitDelayMax);
      std::int32_t shipMode =
          shipModeCodes_[static_cast<std::size_t>(rng.uniform(0, shipModeCount - 1))];
      std::int32_t price = retailPriceCents(partkey);
      std::int32_t extended = price * quantity;
      std::int32_t revenue =
          static_cast<std::int32_t>(std::int64_t{extended} * (100 - discount) / 100);
      totalPrice += std::int64_t{revenue} * (100 + tax) / 100;

      columns[c.orderkey].push_back(orderkey);
      columns[c.linenumber].push_back(line);
      columns[c.custkey].push_back(custkey);
      columns[c.partkey].push_back(partkey);
      columns[c.suppkey].push_back(suppkey);
      columns[c.orderdate].push_back(datekeys_[static_cast<std::size_t>(orderDay)]);
      columns[c.orderpriority].push_back(priority);
      columns[c.shippriority].push_back(0);
      columns[c.quantity].push_back(quantity);
      columns[c.extendedprice].push_back(extended);
      columns[c.discount].push_back(discount);
      columns[c.revenue].push_back(revenue);
      columns[c.supplycost].push_back(6 * price / 10);
      columns[c.tax].push_back(tax);
      columns[c.commitdate].push_back(datekeys_[static_cast<std::size_t>(commitDay)]);
      columns[c.shipmode].push_back(shipMode);
    }
    // The order total is known only after its last line; every line repeats it.
    columns[c.ordtotalprice].resize(orderStart + static_cast<std::size_t>(lines),
                                    static_cast<std::int32_t>(totalPrice));
  }
}

} // namespace mqx::ssb
