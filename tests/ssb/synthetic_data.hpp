// A small, dense synthetic star written in the SSB layout, for differential
// testing of the query implementations. Unlike generated data, where at test
// scale Q3.4 or Q4.3 select a handful of rows or none, it draws dimension
// attributes from short lists around the 13 queries' constants (including
// near misses such as MFGR#2229 next to the range MFGR#2221..2228), order
// dates from the queries' date ranges and their edges, sparse and shuffled
// dimension keys, and some foreign keys that match no dimension row, so
// every query selects many rows and every predicate's boundary is exercised.
#pragma once

#include <cstdint>
#include <filesystem>

namespace mqx::ssb::test {

void writeSyntheticData(const std::filesystem::path &dir, std::uint64_t seed);

} // namespace mqx::ssb::test
