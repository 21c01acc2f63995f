// A dimension table reduced to what a star join needs: for each key, one
// int32 attribute of the matching row (a group-by code, a year), or -1 when
// the row fails the query's predicates on that dimension. Stored as a dense
// array over [min key, max key], since SSB keys are dense (1..N, or the
// yyyymmdd date keys, 61,130 slots for 2,556 days); a key outside the range,
// or in a hole, maps to -1, as an inner join drops it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mqx::ssb {

class KeyMap {
public:
  static constexpr std::int32_t kExcluded = -1;

  // values[i] belongs to keys[i]; both of one length. Throws DataError on a
  // duplicate key, which would make the join ambiguous.
  KeyMap(std::span<const std::int32_t> keys, std::span<const std::int32_t> values);

  std::int32_t lookup(std::int32_t key) const {
    auto slot = static_cast<std::int64_t>(key) - minKey_;
    if (slot < 0 || slot >= static_cast<std::int64_t>(values_.size()))
      return kExcluded;
    return values_[static_cast<std::size_t>(slot)];
  }

  // The largest attribute value held (kExcluded when none passes).
  std::int32_t maxValue() const { return maxValue_; }

private:
  std::int64_t minKey_ = 0;
  std::int32_t maxValue_ = kExcluded;
  std::vector<std::int32_t> values_;
};

// The attribute of each dimension row under a predicate: `attribute[i]` when
// `pass(i)` holds, else KeyMap::kExcluded.
template <class Predicate>
std::vector<std::int32_t> attributeWhere(std::span<const std::int32_t> attribute, Predicate pass) {
  std::vector<std::int32_t> values(attribute.size(), KeyMap::kExcluded);
  for (std::size_t i = 0; i < attribute.size(); ++i)
    if (pass(i))
      values[i] = attribute[i];
  return values;
}

} // namespace mqx::ssb
