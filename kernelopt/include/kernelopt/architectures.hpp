// The table of known architectures: the limits of one representative device
// per compute capability, as listed in the CUDA C++ Programming Guide
// ("Compute Capabilities") and cuda_occupancy.h.
#pragma once

#include "kernelopt/device_limits.hpp"

#include <optional>
#include <span>

namespace mqx::kernelopt {

enum class Architecture {
  Sm70, // V100 SXM2
  Sm75, // T4
  Sm80, // A100 SXM4
  Sm86, // A40
  Sm89, // L40S
  Sm90, // H100 SXM5
};

std::span<const Architecture> knownArchitectures();

// The limits of the representative device of an architecture.
const DeviceLimits &deviceLimits(Architecture architecture);

// The architecture with exactly this compute capability (major * 10 + minor).
std::optional<Architecture> architectureFor(int computeCapability);

} // namespace mqx::kernelopt
