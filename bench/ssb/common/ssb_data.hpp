// The loader: opens a generated SSB data directory, checks its manifest
// against the schema, and reads columns and dictionaries into host memory.
// Loading is per column and on demand, because each query reads only a few
// of lineorder's seventeen columns, and a GPU query program must load its
// columns before its timed part starts.
#pragma once

#include "ssb/common/dictionary.hpp"
#include "ssb/common/manifest.hpp"
#include "ssb/common/schema.hpp"

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace mqx::ssb {

class SsbData {
public:
  // Throws DataError when the manifest is missing, malformed, or lacks a
  // table or column of the schema, or a column is of an unsupported type.
  static SsbData open(const std::filesystem::path &dataDir);

  const std::filesystem::path &directory() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  std::int64_t rows(TableId table) const;

  std::vector<std::int32_t> loadColumn(TableId table, std::string_view column) const;
  Dictionary loadDictionary(TableId table, std::string_view column) const;

private:
  SsbData(std::filesystem::path dir, Manifest manifest);
  const ColumnEntry &entry(TableId table, std::string_view column) const;

  std::filesystem::path dir_;
  Manifest manifest_;
};

} // namespace mqx::ssb
