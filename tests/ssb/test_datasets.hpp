// Generated SSB data directories shared by the tests of one process: each
// (scale factor, seed) is generated once, on first use, into a temporary
// directory that is removed at exit. Scale factors stay at 0.1 and below so
// the whole suite runs in seconds on two cores.
#pragma once

#include "ssb/common/ssb_data.hpp"

#include <cstdint>
#include <filesystem>

namespace mqx::ssb::test {

struct Dataset {
  std::filesystem::path dir;
  SsbData data;
};

const Dataset &generatedDataset(double scaleFactor, std::uint64_t seed);

// Generates into `dir` (which the caller owns) with the given thread count.
void generateInto(const std::filesystem::path &dir, double scaleFactor, std::uint64_t seed,
                  unsigned threads);

} // namespace mqx::ssb::test
