// Generates a complete SSB data directory: the five tables as column files
// and dictionaries, then manifest.json. The manifest is written last, through
// a rename, so a directory whose generation failed or was interrupted has no
// manifest and cannot be loaded by mistake.
#pragma once

#include "ssb/common/manifest.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace mqx::ssb {

inline constexpr std::string_view kGeneratorName = "mqx ssb-datagen 1";

struct GeneratorOptions {
  double scaleFactor = 1.0;
  std::uint64_t seed = 1;
  std::filesystem::path outDir;
  // Worker threads for lineorder; 0 means one per hardware thread. The
  // output does not depend on it.
  unsigned threads = 0;
  // Called with a line of progress now and then; may be empty.
  std::function<void(const std::string &)> progress;
};

// Throws std::invalid_argument for a bad scale factor and DataError for I/O
// failures.
Manifest generateSsb(const GeneratorOptions &options);

} // namespace mqx::ssb
