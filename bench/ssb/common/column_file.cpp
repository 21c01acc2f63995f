#include "ssb/common/column_file.hpp"

#include "ssb/common/error.hpp"

#include <bit>
#include <fstream>

namespace mqx::ssb {
namespace {

constexpr std::size_t kWriteBufferBytes = 1 << 20;

std::uint32_t byteSwap(std::uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
}

// The file format is little-endian; on a big-endian host values are swapped
// on the way in and out (a no-op branch on every machine mqx targets today).
void toFileOrder(std::span<std::int32_t> values) {
  if constexpr (std::endian::native == std::endian::big)
    for (std::int32_t& v : values)
      v = static_cast<std::int32_t>(byteSwap(static_cast<std::uint32_t>(v)));
}

} // namespace

void readInt32ColumnInto(const std::filesystem::path& path, std::int64_t expectedRows, std::span<std::int32_t> out) {
  std::error_code error;
  auto bytes = std::filesystem::file_size(path, error);
  if (error) throw DataError("cannot stat " + path.string() + ": " + error.message());
  auto expectedBytes = static_cast<std::uintmax_t>(expectedRows) * sizeof(std::int32_t);
  if (bytes != expectedBytes)
    throw DataError(path.string() + " holds " + std::to_string(bytes) + " bytes, expected " +
                    std::to_string(expectedBytes) + " (" + std::to_string(expectedRows) + " int32 rows)");
  if (out.size() != static_cast<std::size_t>(expectedRows))
    throw DataError("reading " + path.string() + " into " + std::to_string(out.size()) + " values, expected " +
                    std::to_string(expectedRows));
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(bytes)))
    throw DataError("cannot read " + path.string());
  toFileOrder(out);
}

std::vector<std::int32_t> readInt32Column(const std::filesystem::path& path, std::int64_t expectedRows) {
  if (expectedRows < 0) throw DataError(path.string() + ": negative row count " + std::to_string(expectedRows));
  std::vector<std::int32_t> values(static_cast<std::size_t>(expectedRows));
  readInt32ColumnInto(path, expectedRows, values);
  return values;
}

Int32ColumnWriter::Int32ColumnWriter(const std::filesystem::path& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) throw DataError("cannot create " + path.string());
  std::setvbuf(file_, nullptr, _IOFBF, kWriteBufferBytes);
}

Int32ColumnWriter::Int32ColumnWriter(Int32ColumnWriter&& other) noexcept
    : path_(std::move(other.path_)), file_(other.file_), rows_(other.rows_) {
  other.file_ = nullptr;
}

Int32ColumnWriter::~Int32ColumnWriter() {
  // An unclosed writer is an abandoned one (an exception is unwinding): the
  // partial file is left behind, and the missing manifest marks it invalid.
  if (file_ != nullptr) std::fclose(file_);
}

void Int32ColumnWriter::append(std::span<const std::int32_t> values) {
  if (file_ == nullptr) throw DataError("append to closed column " + path_.string());
  if constexpr (std::endian::native == std::endian::big) {
    std::vector<std::int32_t> swapped(values.begin(), values.end());
    toFileOrder(swapped);
    std::fwrite(swapped.data(), sizeof(std::int32_t), swapped.size(), file_);
  } else {
    std::fwrite(values.data(), sizeof(std::int32_t), values.size(), file_);
  }
  rows_ += static_cast<std::int64_t>(values.size());
}

void Int32ColumnWriter::close() {
  if (file_ == nullptr) return;
  bool failed = std::ferror(file_) != 0;
  failed |= std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed) throw DataError("error writing " + path_.string());
}

} // namespace mqx::ssb
