// The one execution strategy of the CPU reference: a single scan of
// lineorder that probes each dimension's KeyMap through its foreign key,
// drops the row when any dimension excludes it, and sums a measure per
// combination of the dimensions' attributes. It is deliberately plain
// (no vectorisation, no parallelism): the reference must be obviously right,
// not fast, and exact integer arithmetic throughout.
#pragma once

#include "ssb/common/error.hpp"
#include "ssb/reference/key_map.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mqx::ssb {

struct StarJoin {
  std::span<const std::int32_t> foreignKeys; // a lineorder column
  const KeyMap *map;
};

// One group: the joins' attributes in join order, and the sum of the measure.
struct GroupSum {
  std::vector<std::int32_t> attributes;
  std::int64_t sum;
};

namespace detail {
// Group keys pack each attribute into 16 bits: years and every SSB
// dictionary code fit, and packing keeps the hash map cheap.
inline constexpr int kAttributeBits = 16;
inline constexpr std::size_t kMaxJoins = 4;
} // namespace detail

// Sums measure(i) over lineorder rows i that pass rowFilter(i) and every
// join. Groups come back in no particular order.
template <class RowFilter, class Measure>
std::vector<GroupSum> starAggregate(std::span<const StarJoin> joins, std::size_t rows,
                                    RowFilter rowFilter, Measure measure) {
  if (joins.size() > detail::kMaxJoins)
    throw DataError("too many joins for a packed group key");
  for (const StarJoin &join : joins) {
    if (join.foreignKeys.size() != rows)
      throw DataError("foreign key column of the wrong length");
    if (join.map->maxValue() >= (1 << detail::kAttributeBits))
      throw DataError("dimension attribute too large for a packed group key");
  }
  std::unordered_map<std::uint64_t, std::int64_t> sums;
  for (std::size_t i = 0; i < rows; ++i) {
    if (!rowFilter(i))
      continue;
    std::uint64_t key = 0;
    bool joined = true;
    for (const StarJoin &join : joins) {
      std::int32_t attribute = join.map->lookup(join.foreignKeys[i]);
      if (attribute == KeyMap::kExcluded) {
        joined = false;
        break;
      }
      key = (key << detail::kAttributeBits) | static_cast<std::uint64_t>(attribute);
    }
    if (joined)
      sums[key] += measure(i);
  }
  std::vector<GroupSum> groups;
  groups.reserve(sums.size());
  for (auto [packed, sum] : sums) {
    std::uint64_t key = packed;
    std::vector<std::int32_t> attributes(joins.size());
    for (std::size_t j = joins.size(); j-- > 0;) {
      attributes[j] = static_cast<std::int32_t>(key & ((1u << detail::kAttributeBits) - 1));
      key >>= detail::kAttributeBits;
    }
    groups.push_back(GroupSum{std::move(attributes), sum});
  }
  return groups;
}

} // namespace mqx::ssb
