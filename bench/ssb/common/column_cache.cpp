#include "ssb/common/column_cache.hpp"

#include "ssb/common/error.hpp"
#include "ssb/common/shared_column_store.hpp"

namespace mqx::ssb {

ColumnCache::ColumnCache(const SsbData& data, const SharedColumnStore& store) : data_(data), store_(&store) {
  const Manifest& manifest = data.manifest();
  if (manifest.scaleFactor != store.scaleFactor() || manifest.seed != store.seed())
    throw DataError("shared column store " + store.name() + " holds SF " + std::to_string(store.scaleFactor()) +
                    " seed " + std::to_string(store.seed()) + ", the data directory " + data.directory().string() +
                    " SF " + std::to_string(manifest.scaleFactor) + " seed " + std::to_string(manifest.seed));
  for (const TableSchema& table : ssbSchema())
    for (const ColumnSchema& column : table.columns)
      if (store.column(table.id, column.name).size() != static_cast<std::size_t>(rows(table.id)))
        throw DataError("shared column store " + store.name() + ": " + std::string(column.name) + " holds " +
                        std::to_string(store.column(table.id, column.name).size()) + " rows, the manifest says " +
                        std::to_string(rows(table.id)));
}

std::span<const std::int32_t> ColumnCache::column(TableId table, std::string_view column) {
  Key key{table, std::string(column)};
  if (store_ != nullptr) {
    auto view = views_.find(key);
    if (view == views_.end()) {
      data_.manifest().table(tableName(table)).column(column); // unknown columns throw here
      view = views_.emplace(std::move(key), store_->column(table, column)).first;
    }
    return view->second;
  }
  auto it = columns_.find(key);
  if (it == columns_.end()) {
    it = columns_.emplace(std::move(key), data_.loadColumn(table, column)).first;
    loadedBytes_ += it->second.size() * sizeof(std::int32_t);
  }
  return it->second;
}

const Dictionary& ColumnCache::dictionary(TableId table, std::string_view column) {
  Key key{table, std::string(column)};
  auto it = dictionaries_.find(key);
  if (it == dictionaries_.end()) it = dictionaries_.emplace(std::move(key), data_.loadDictionary(table, column)).first;
  return it->second;
}

} // namespace mqx::ssb
