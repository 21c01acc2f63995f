// Table cardinalities for a scale factor, as the SSB specification gives
// them: lineorder 1,500,000 x SF orders of 1..7 lines each (so about
// 6,000,000 x SF rows), customer 30,000 x SF, supplier 2,000 x SF, part
// 200,000 x floor(1 + log2 SF), date 2,556 days.
//
// Fractional scale factors are allowed, as dbgen allows them: below 1 every
// scaled table is scaled linearly (part too, since 1 + log2 SF would be below
// one), with at least one row. Above 1 the linear tables are scaled by the
// exact factor rather than dbgen's integer truncation of it.
#pragma once

#include <cstdint>

namespace mqx::ssb {

// lo_orderkey is an int32 built from the order number as dbgen does (8 keys
// used out of every 32); 300 is the largest scale factor whose keys fit.
inline constexpr double kMaxScaleFactor = 300.0;
inline constexpr std::int64_t kDateRows = 2556;

struct Cardinalities {
  std::int64_t orders = 0; // lineorder rows are the sum of the orders' line counts
  std::int64_t customers = 0;
  std::int64_t suppliers = 0;
  std::int64_t parts = 0;
  std::int64_t dates = kDateRows;
};

// Throws std::invalid_argument unless 0 < scaleFactor <= kMaxScaleFactor.
Cardinalities cardinalitiesFor(double scaleFactor);

} // namespace mqx::ssb
