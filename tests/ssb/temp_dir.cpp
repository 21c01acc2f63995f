#include "temp_dir.hpp"

#include <stdexcept>
#include <stdlib.h>
#include <string>

namespace mqx::ssb::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "mqx-ssb-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored; // cleanup must not throw from a destructor
  std::filesystem::remove_all(path_, ignored);
}

} // namespace mqx::ssb::test
