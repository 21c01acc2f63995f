// What the four query flights share: looking up query constants in the
// data's dictionaries, building a dimension's KeyMap from a predicate, and
// decoding group attributes back to strings.
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/reference/key_map.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb::detail {

// A code that no stored code equals: the code of a constant the data's
// dictionary lacks, so that the predicate selects nothing, as SQL would.
inline constexpr std::int32_t kAbsentCode = -2;

inline std::int32_t codeOf(ColumnCache &cache, TableId table, std::string_view column,
                           std::string_view value) {
  auto code = cache.dictionary(table, column).find(value);
  return code ? *code : kAbsentCode;
}

// KeyMap of a dimension whose attribute is `attribute` where `pass` holds.
template <class Predicate>
KeyMap dimensionMap(std::span<const std::int32_t> keys, std::span<const std::int32_t> attribute,
                    Predicate pass) {
  return KeyMap(keys, attributeWhere(attribute, pass));
}

// KeyMap of a dimension that only filters: attribute 0 where `pass` holds.
template <class Predicate> KeyMap filterMap(std::span<const std::int32_t> keys, Predicate pass) {
  std::vector<std::int32_t> zeros(keys.size(), 0);
  return KeyMap(keys, attributeWhere(zeros, pass));
}

inline std::string decode(ColumnCache &cache, TableId table, std::string_view column,
                          std::int32_t code) {
  return cache.dictionary(table, column).value(code);
}

} // namespace mqx::ssb::detail
