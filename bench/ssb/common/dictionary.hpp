// A sorted string dictionary: code i is the i-th string in ascending byte
// order. Because the order is fixed by the strings alone (not by first
// appearance in the data), code comparisons equal string comparisons, a
// string range like p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228' is a code
// range, and ORDER BY on a string column may sort by code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb {

class Dictionary {
public:
  Dictionary() = default;
  // Throws DataError unless `sortedValues` is strictly ascending and free of
  // newlines (the file format is one value per line).
  explicit Dictionary(std::vector<std::string> sortedValues);
  // Sorts and removes duplicates first.
  static Dictionary fromValues(std::vector<std::string> values);

  std::int32_t size() const { return static_cast<std::int32_t>(values_.size()); }
  const std::vector<std::string> &values() const { return values_; }
  const std::string &value(std::int32_t code) const; // throws DataError when out of range
  std::optional<std::int32_t> find(std::string_view value) const;
  std::int32_t code(std::string_view value) const; // throws DataError when absent
  // The first code whose value is >= `value` (size() when none): the lower end
  // of a code range for a string range predicate.
  std::int32_t lowerBound(std::string_view value) const;
  // The first code whose value is > `value`.
  std::int32_t upperBound(std::string_view value) const;

  bool operator==(const Dictionary &other) const = default;

private:
  std::vector<std::string> values_;
};

Dictionary readDictionary(const std::filesystem::path &path);
void writeDictionary(const std::filesystem::path &path, const Dictionary &dictionary);

} // namespace mqx::ssb
