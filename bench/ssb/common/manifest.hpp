// The manifest of a generated SSB data directory (manifest.json): the scale
// factor and seed it was generated with, and for every table its row count
// and its columns with their type, column file and dictionary file. Paths are
// relative to the data directory, so a directory can be moved or copied.
// Objects keep their insertion order (nlohmann::ordered_json), so that a
// manifest written twice from the same data is byte-identical (the
// determinism tests rely on it).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb {

inline constexpr std::string_view kManifestFileName = "manifest.json";
inline constexpr std::string_view kManifestFormat = "mqx-ssb-columnar";
inline constexpr std::int64_t kManifestVersion = 1;

struct ColumnEntry {
  std::string name;
  std::string type = "int32"; // the only stored type today; checked by the loader
  std::string file;
  std::string dictionary; // empty when the column holds plain integers
  std::int64_t dictionarySize = 0;

  bool hasDictionary() const { return !dictionary.empty(); }
};

struct TableEntry {
  std::string name;
  std::int64_t rows = 0;
  std::vector<ColumnEntry> columns;

  const ColumnEntry* find(std::string_view column) const;
  const ColumnEntry& column(std::string_view column) const; // throws DataError
};

struct Manifest {
  double scaleFactor = 0;
  std::uint64_t seed = 0;
  std::string generator;
  std::vector<TableEntry> tables;

  const TableEntry* find(std::string_view table) const;
  const TableEntry& table(std::string_view table) const; // throws DataError

  nlohmann::ordered_json toJson() const;
  static Manifest fromJson(const nlohmann::ordered_json& json); // throws DataError
};

// Throws DataError naming the file when it is missing, not JSON or not a
// manifest.
Manifest readManifest(const std::filesystem::path& dataDir);
// Atomic: a reader sees the old manifest, none, or the complete new one.
void writeManifest(const std::filesystem::path& dataDir, const Manifest& manifest);

} // namespace mqx::ssb
