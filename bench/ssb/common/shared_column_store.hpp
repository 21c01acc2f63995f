// A shared-memory copy of an SSB data directory's columns, kept by one loader
// process (ssb-loader) the way a database keeps its buffer pool: query
// processes map it read-only instead of reading column files, so that at a
// large scale factor a query process spends its time on the GPU, as in the
// paper's experiments, where the data sits in host memory (docs/ssb.md, "The
// paper's regime").
//
// The store is one POSIX shared-memory object (Boost.Interprocess, mode 0600)
// holding a header and then every column of the schema, each at a page
// boundary, and a small area of named texts (the loader puts the CPU
// reference's result of each query there). A plain mapping, not a managed
// segment: nothing in it is locked, the loader publishes it with one atomic
// store of the header's state once everything is written, and every wait on
// it is bounded and names what it waits for.
#pragma once

#include "ssb/common/schema.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace mqx::ssb {

class SsbData;
struct StoreHeader;

class SharedColumnStore {
public:
  // The loader's: creates store `name` sized for every column of `data`
  // plus `textBytes` of named texts and reads the columns into it; the store
  // is not visible to queries until publish(). A store left by a loader that
  // is no longer alive is replaced; one whose loader lives is a DataError
  // naming its pid. The object is removed when the creating store is
  // destroyed (queries that mapped it keep their mapping).
  static SharedColumnStore create(const std::string& name, const SsbData& data, std::size_t textBytes);

  // A query's: maps store `name` read-only, waiting up to `wait` while it
  // does not exist yet or its loader is still loading. Throws DataError
  // naming the store and what was waited for when it is not ready in time,
  // when its loader died before publishing it, or is gone.
  static SharedColumnStore open(const std::string& name, std::chrono::milliseconds wait);

  // Asks the loader of store `name` to stop (ssb-loader --stop); false when
  // there is no such store.
  static bool requestStop(const std::string& name);

  SharedColumnStore(SharedColumnStore&& other) noexcept;
  SharedColumnStore& operator=(SharedColumnStore&& other) noexcept;
  SharedColumnStore(const SharedColumnStore&) = delete;
  SharedColumnStore& operator=(const SharedColumnStore&) = delete;
  ~SharedColumnStore();

  const std::string& name() const { return name_; }
  // The data directory the columns were read from (manifest, dictionaries).
  std::filesystem::path dataDirectory() const;
  double scaleFactor() const;
  std::uint64_t seed() const;
  pid_t loaderPid() const;
  std::size_t bytes() const;
  std::size_t columnCount() const;

  // Throws DataError when the store has no such column.
  std::span<const std::int32_t> column(TableId table, std::string_view column) const;

  // Named texts (loader: before publish); a key is at most 31 bytes.
  void putText(std::string_view key, std::string_view text);
  std::optional<std::string_view> text(std::string_view key) const;

  // The loader's: makes the store visible to queries.
  void publish();
  // Whether someone asked the loader to stop (requestStop).
  bool stopRequested() const;

private:
  SharedColumnStore() = default;
  struct Mapping;

  std::string name_;
  std::unique_ptr<Mapping> mapping_;
  bool owner_ = false;
};

// The shared-memory object's name of store `name` (per user: the store is
// mapped by this user's processes only).
std::string sharedStoreObjectName(const std::string& name);

} // namespace mqx::ssb
