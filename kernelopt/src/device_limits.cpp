#include "kernelopt/device_limits.hpp"

#include "kernelopt/architectures.hpp"
#include "kernelopt/device_attributes.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mqx::kernelopt {

int DeviceLimits::warpsPerSm() const { return std::min(maxWarpsPerSm, maxThreadsPerSm / warpSize); }

int DeviceLimits::maxWarpsPerBlock() const { return maxThreadsPerBlock / warpSize; }

int DeviceLimits::registerUnitsPerPartition() const {
  return registersPerSm / registerPartitions / registerAllocationUnit;
}

int DeviceLimits::registerUnitsPerSm() const { return registersPerSm / registerAllocationUnit; }

namespace {

void require(bool condition, const char *what) {
  if (!condition)
    throw std::invalid_argument(std::string("kernelopt: invalid device limits: ") + what);
}

// Granularities no device attribute reports, per architecture family
// (cudaOccRegAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor,
// cudaOccSMemAllocationGranularity, cudaOccRegAllocationMaxPerThread).
// Families after sm_90 are assumed to keep the sm_80/sm_90 values.
void fillFamilyGranularities(DeviceLimits &limits, int major) {
  if (major < 7)
    throw std::invalid_argument("kernelopt: architectures before sm_70 are not supported");
  limits.registerAllocationUnit = 256;
  limits.registerPartitions = 4;
  limits.maxRegistersPerThread = 255;
  limits.sharedMemoryAllocationUnit = major == 7 ? 256 : 128;
}

} // namespace

DeviceLimits DeviceLimits::fromAttributes(const DeviceAttributes &a) {
  // The attributes may come from a message (mqxd's launch service): range
  // first, so that nothing below overflows (found by tests/fuzz).
  require(a.computeCapabilityMajor >= 1 && a.computeCapabilityMajor <= 99, "computeCapabilityMajor out of range");
  require(a.computeCapabilityMinor >= 0 && a.computeCapabilityMinor <= 9, "computeCapabilityMinor out of range");
  DeviceLimits limits;
  limits.name = "sm_" + std::to_string(a.computeCapabilityMajor) + std::to_string(a.computeCapabilityMinor) +
                " (device attributes)";
  limits.computeCapability = a.computeCapabilityMajor * 10 + a.computeCapabilityMinor;
  limits.smCount = a.multiprocessorCount;
  limits.warpSize = a.warpSize;
  limits.maxThreadsPerBlock = a.maxThreadsPerBlock;
  limits.maxThreadsPerSm = a.maxThreadsPerMultiprocessor;
  limits.maxBlocksPerSm = a.maxBlocksPerMultiprocessor;
  limits.maxWarpsPerSm = a.warpSize > 0 ? a.maxThreadsPerMultiprocessor / a.warpSize : 0;
  limits.registersPerSm = a.maxRegistersPerMultiprocessor;
  limits.maxRegistersPerBlock = a.maxRegistersPerBlock;
  limits.sharedMemoryPerSm = a.maxSharedMemoryPerMultiprocessor;
  limits.maxSharedMemoryPerBlock = a.maxSharedMemoryPerBlockOptin;
  limits.reservedSharedMemoryPerBlock = a.reservedSharedMemoryPerBlock;
  fillFamilyGranularities(limits, a.computeCapabilityMajor);
  validate(limits);
  return limits;
}

void validate(const DeviceLimits &l) {
  require(l.smCount > 0, "smCount must be positive");
  require(l.warpSize > 0, "warpSize must be positive");
  require(l.maxThreadsPerBlock >= l.warpSize, "maxThreadsPerBlock must hold at least one warp");
  require(l.maxThreadsPerSm >= l.warpSize, "maxThreadsPerSm must hold at least one warp");
  require(l.maxBlocksPerSm > 0, "maxBlocksPerSm must be positive");
  require(l.maxWarpsPerSm > 0, "maxWarpsPerSm must be positive");
  require(l.registersPerSm > 0, "registersPerSm must be positive");
  require(l.maxRegistersPerBlock > 0, "maxRegistersPerBlock must be positive");
  require(l.maxRegistersPerThread > 0, "maxRegistersPerThread must be positive");
  require(l.registerAllocationUnit > 0, "registerAllocationUnit must be positive");
  require(l.registerPartitions > 0, "registerPartitions must be positive");
  require(l.registerUnitsPerPartition() > 0, "registersPerSm must hold one allocation unit per partition");
  require(l.sharedMemoryPerSm > 0, "sharedMemoryPerSm must be positive");
  require(l.maxSharedMemoryPerBlock >= 0, "maxSharedMemoryPerBlock must not be negative");
  require(l.sharedMemoryAllocationUnit > 0, "sharedMemoryAllocationUnit must be positive");
  require(l.reservedSharedMemoryPerBlock >= 0, "reservedSharedMemoryPerBlock must not be negative");
  // In 64 bits: limits may come from a message (mqxd's launch service), and
  // two large ints overflow.
  require(std::int64_t{l.maxSharedMemoryPerBlock} + l.reservedSharedMemoryPerBlock <= l.sharedMemoryPerSm,
          "a block may not request more shared memory than an SM has");
  // The solvers' tables are sized by blocks and warps per SM and add shared
  // memory in 32-bit integers: keep both far from overflow.
  // Far above any GPU, low enough that products of a kernel's registers,
  // threads and shared memory with these stay in 32 bits (found by fuzzing
  // mqxd's launch service, whose limits come from a message).
  require(l.warpSize <= 1024 && l.maxThreadsPerBlock <= (1 << 16) && l.maxThreadsPerSm <= (1 << 16) &&
              l.maxRegistersPerThread <= 1024 && l.registersPerSm <= (1 << 24) && l.maxRegistersPerBlock <= (1 << 24),
          "warp size, threads and registers must be within 32-bit arithmetic (beyond any GPU)");
  require(l.maxBlocksPerSm <= 4096 && l.warpsPerSm() <= 4096 && l.registerUnitsPerSm() <= 4096,
          "blocks, warps and register units per SM must be at most 4096");
  require(static_cast<std::int64_t>(l.maxBlocksPerSm) * l.sharedMemoryPerSm < (std::int64_t{1} << 30),
          "maxBlocksPerSm * sharedMemoryPerSm must stay below 2^30");
}

namespace {

DeviceLimits makeLimits(const char *name, int cc, int sms, int threadsPerSm, int blocksPerSm, int smemPerSm,
                        int smemPerBlock, int reserved) {
  DeviceLimits l;
  l.name = name;
  l.computeCapability = cc;
  l.smCount = sms;
  l.warpSize = 32;
  l.maxThreadsPerBlock = 1024;
  l.maxThreadsPerSm = threadsPerSm;
  l.maxBlocksPerSm = blocksPerSm;
  l.maxWarpsPerSm = threadsPerSm / 32;
  l.registersPerSm = 65536;
  l.maxRegistersPerBlock = 65536;
  l.sharedMemoryPerSm = smemPerSm;
  l.maxSharedMemoryPerBlock = smemPerBlock;
  l.reservedSharedMemoryPerBlock = reserved;
  fillFamilyGranularities(l, cc / 10);
  return l;
}

constexpr int KiB = 1024;

const std::array<DeviceLimits, 6> &table() {
  static const std::array<DeviceLimits, 6> limits{
      makeLimits("sm_70 (V100 SXM2)", 70, 80, 2048, 32, 96 * KiB, 96 * KiB, 0),
      makeLimits("sm_75 (T4)", 75, 40, 1024, 16, 64 * KiB, 64 * KiB, 0),
      makeLimits("sm_80 (A100 SXM4)", 80, 108, 2048, 32, 164 * KiB, 163 * KiB, 1 * KiB),
      makeLimits("sm_86 (A40)", 86, 84, 1536, 16, 100 * KiB, 99 * KiB, 1 * KiB),
      makeLimits("sm_89 (L40S)", 89, 142, 1536, 24, 100 * KiB, 99 * KiB, 1 * KiB),
      makeLimits("sm_90 (H100 SXM5)", 90, 132, 2048, 32, 228 * KiB, 227 * KiB, 1 * KiB),
  };
  return limits;
}

constexpr std::array kArchitectures{Architecture::Sm70, Architecture::Sm75, Architecture::Sm80,
                                    Architecture::Sm86, Architecture::Sm89, Architecture::Sm90};

} // namespace

std::span<const Architecture> knownArchitectures() { return kArchitectures; }

const DeviceLimits &deviceLimits(Architecture architecture) {
  return table().at(static_cast<std::size_t>(architecture));
}

std::optional<Architecture> architectureFor(int computeCapability) {
  for (Architecture architecture : kArchitectures)
    if (deviceLimits(architecture).computeCapability == computeCapability)
      return architecture;
  return std::nullopt;
}

} // namespace mqx::kernelopt
