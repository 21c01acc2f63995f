// The lineorder fact table, generated order by order as dbgen does: each
// order has 1..7 lines (uniform, 4 on average, hence about 6,000,000 x SF
// rows), one order date, customer and priority shared by its lines, and per
// line a uniform part, supplier, quantity 1..50, discount 0..10, tax 0..8,
// commit delay 30..90 days and ship mode. Prices follow dbgen's integer
// arithmetic in cents:
//   lo_extendedprice = lo_quantity x retail price of the part
//   lo_revenue       = lo_extendedprice x (100 - lo_discount) / 100
//   lo_supplycost    = 6 x retail price / 10
//   lo_ordtotalprice = sum over the order's lines of
//                      (lo_extendedprice x (100 - discount) / 100) x (100 + tax) / 100
//
// Orders are generated in fixed-size chunks, each from its own random stream,
// so chunks can be generated on any number of threads with identical output.
#pragma once

#include "ssb/common/table_writer.hpp"

#include <cstdint>
#include <vector>

namespace mqx::ssb {

inline constexpr std::int64_t kOrdersPerChunk = 1 << 14;

// TPC-H's P_RETAILPRICE in cents, which SSB keeps implicit in lineorder.
constexpr std::int32_t retailPriceCents(std::int32_t partkey) {
  return 90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000);
}

// dbgen's sparse order keys: of every 32 keys the first 8 are used.
constexpr std::int32_t orderKeyOf(std::int64_t orderNumber) {
  return static_cast<std::int32_t>(((orderNumber >> 3) << 5) | (orderNumber & 7));
}

struct LineorderParameters {
  std::int64_t orders;
  std::int64_t customers;
  std::int64_t suppliers;
  std::int64_t parts;
  std::uint64_t seed;
};

class LineorderGenerator {
public:
  explicit LineorderGenerator(const LineorderParameters &parameters);

  std::int64_t chunkCount() const;
  // Replaces `columns` (schema order) by the rows of chunk `chunk`. Const and
  // free of shared mutable state, so threads may call it concurrently.
  void generateChunk(std::int64_t chunk, std::vector<std::vector<std::int32_t>> &columns) const;
  DictionaryMap dictionaries() const;

private:
  std::int32_t drawCustomer(class Rng &rng) const;

  LineorderParameters parameters_;
  std::vector<std::int32_t> datekeys_; // by day index, for order and commit dates
  std::vector<std::int32_t> priorityCodes_;
  std::vector<std::int32_t> shipModeCodes_;
  DictionaryMap dictionaries_;
};

} // namespace mqx::ssb
