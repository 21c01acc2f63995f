#include "ssb/common/dictionary.hpp"

#include "ssb/common/error.hpp"

#include <algorithm>
#include <fstream>

namespace mqx::ssb {

Dictionary::Dictionary(std::vector<std::string> sortedValues) : values_(std::move(sortedValues)) {
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (values_[i].find('\n') != std::string::npos)
      throw DataError("dictionary value contains a newline: " + values_[i]);
    if (i > 0 && !(values_[i - 1] < values_[i]))
      throw DataError("dictionary is not strictly ascending at \"" + values_[i] + "\"");
  }
}

Dictionary Dictionary::fromValues(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return Dictionary(std::move(values));
}

const std::string &Dictionary::value(std::int32_t code) const {
  if (code < 0 || code >= size())
    throw DataError("dictionary code " + std::to_string(code) + " out of range [0, " +
                    std::to_string(size()) + ")");
  return values_[static_cast<std::size_t>(code)];
}

std::optional<std::int32_t> Dictionary::find(std::string_view value) const {
  std::int32_t code = lowerBound(value);
  if (code < size() && values_[static_cast<std::size_t>(code)] == value)
    return code;
  return std::nullopt;
}

std::int32_t Dictionary::code(std::string_view value) const {
  if (auto code = find(value))
    return *code;
  throw DataError("value \"" + std::string(value) + "\" is not in the dictionary");
}

std::int32_t Dictionary::lowerBound(std::string_view value) const {
  auto it = std::lower_bound(values_.begin(), values_.end(), value);
  return static_cast<std::int32_t>(it - values_.begin());
}

std::int32_t Dictionary::upperBound(std::string_view value) const {
  auto it = std::upper_bound(values_.begin(), values_.end(), value);
  return static_cast<std::int32_t>(it - values_.begin());
}

Dictionary readDictionary(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError("cannot open " + path.string());
  std::vector<std::string> values;
  for (std::string line; std::getline(in, line);)
    values.push_back(std::move(line));
  try {
    return Dictionary(std::move(values));
  } catch (const DataError &error) {
    throw DataError(path.string() + ": " + error.what());
  }
}

void writeDictionary(const std::filesystem::path &path, const Dictionary &dictionary) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const std::string &value : dictionary.values())
    out << value << '\n';
  if (!out.flush())
    throw DataError("cannot write " + path.string());
}

} // namespace mqx::ssb
