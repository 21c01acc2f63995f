// Loads each column or dictionary of an SSB data directory at most once and
// keeps it for the cache's lifetime, so that running several queries over the
// same data (ssb-reference --query all, the tests) reads each file once.
// Given a shared column store (shared_column_store.hpp), columns are views of
// the store's mapping instead and nothing is read from column files.
// Not thread-safe: one cache per thread.
#pragma once

#include "ssb/common/dictionary.hpp"
#include "ssb/common/schema.hpp"
#include "ssb/common/ssb_data.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mqx::ssb {

class SharedColumnStore;

class ColumnCache {
public:
  explicit ColumnCache(const SsbData& data) : data_(data) {}
  // Columns from `store` (which must outlive the cache); dictionaries from
  // the data directory. Throws DataError when the store holds other data
  // (scale factor, seed or a table's rows differ from the manifest's).
  ColumnCache(const SsbData& data, const SharedColumnStore& store);

  // Views stay valid for the cache's lifetime (node-based maps, or the
  // store's mapping).
  std::span<const std::int32_t> column(TableId table, std::string_view column);
  const Dictionary& dictionary(TableId table, std::string_view column);
  std::int64_t rows(TableId table) const { return data_.rows(table); }
  const SsbData& data() const { return data_; }
  // Bytes of column data read from files, for reporting what a query
  // loaded (0 with a shared store).
  std::size_t loadedBytes() const { return loadedBytes_; }

private:
  using Key = std::pair<TableId, std::string>;

  const SsbData& data_;
  const SharedColumnStore* store_ = nullptr;
  std::map<Key, std::vector<std::int32_t>, std::less<>> columns_;
  std::map<Key, std::span<const std::int32_t>, std::less<>> views_;
  std::map<Key, Dictionary, std::less<>> dictionaries_;
  std::size_t loadedBytes_ = 0;
};

} // namespace mqx::ssb
