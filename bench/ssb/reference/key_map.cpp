#include "ssb/reference/key_map.hpp"

#include "ssb/common/error.hpp"

#include <algorithm>
#include <string>

namespace mqx::ssb {

KeyMap::KeyMap(std::span<const std::int32_t> keys, std::span<const std::int32_t> values) {
  if (keys.size() != values.size())
    throw DataError("key and value columns differ in length");
  if (keys.empty())
    return;
  auto [low, high] = std::minmax_element(keys.begin(), keys.end());
  minKey_ = *low;
  values_.assign(static_cast<std::size_t>(std::int64_t{*high} - *low + 1), kExcluded);
  std::vector<bool> seen(values_.size(), false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto slot = static_cast<std::size_t>(std::int64_t{keys[i]} - minKey_);
    if (seen[slot])
      throw DataError("duplicate dimension key " + std::to_string(keys[i]));
    seen[slot] = true;
    values_[slot] = values[i];
    maxValue_ = std::max(maxValue_, values[i]);
  }
}

} // namespace mqx::ssb
