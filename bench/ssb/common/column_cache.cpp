#include "ssb/common/column_cache.hpp"

namespace mqx::ssb {

const std::vector<std::int32_t> &ColumnCache::column(TableId table, std::string_view column) {
  Key key{table, std::string(column)};
  auto it = columns_.find(key);
  if (it == columns_.end()) {
    it = columns_.emplace(std::move(key), data_.loadColumn(table, column)).first;
    loadedBytes_ += it->second.size() * sizeof(std::int32_t);
  }
  return it->second;
}

const Dictionary &ColumnCache::dictionary(TableId table, std::string_view column) {
  Key key{table, std::string(column)};
  auto it = dictionaries_.find(key);
  if (it == dictionaries_.end())
    it = dictionaries_.emplace(std::move(key), data_.loadDictionary(table, column)).first;
  return it->second;
}

} // namespace mqx::ssb
