// Column files: a bare array of little-endian int32 values, one per row, with
// no header (the manifest holds the row count). Bare arrays are what a GPU
// query program wants: one read into host memory, one copy to the device.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <vector>

namespace mqx::ssb {

// Reads a whole column; throws DataError unless the file holds exactly
// `expectedRows` values.
std::vector<std::int32_t> readInt32Column(const std::filesystem::path& path, std::int64_t expectedRows);
// The same into `out` (exactly `expectedRows` values): the shared column
// store reads each column straight into shared memory.
void readInt32ColumnInto(const std::filesystem::path& path, std::int64_t expectedRows, std::span<std::int32_t> out);

// Appends int32 values to a new column file through a large stdio buffer, so
// that the generator's many small appends become few large writes.
class Int32ColumnWriter {
public:
  explicit Int32ColumnWriter(const std::filesystem::path& path);
  ~Int32ColumnWriter();
  Int32ColumnWriter(Int32ColumnWriter&& other) noexcept;
  Int32ColumnWriter& operator=(Int32ColumnWriter&&) = delete;
  Int32ColumnWriter(const Int32ColumnWriter&) = delete;
  Int32ColumnWriter& operator=(const Int32ColumnWriter&) = delete;

  void append(std::span<const std::int32_t> values);
  std::int64_t rows() const { return rows_; }
  // Flushes and closes; throws DataError on a write error (a full disk shows
  // up here, not in append).
  void close();

private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::int64_t rows_ = 0;
};

} // namespace mqx::ssb
