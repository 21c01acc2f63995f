// A fresh directory under the system temporary directory, removed with its
// contents when the object goes away: generated test data never lands in the
// source tree.
#pragma once

#include <filesystem>

namespace mqx::ssb::test {

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace mqx::ssb::test
