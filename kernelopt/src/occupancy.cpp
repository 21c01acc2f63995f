#include "kernelopt/occupancy.hpp"

#include "kernelopt/allocation.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace mqx::kernelopt {

namespace {

constexpr int kUnlimited = std::numeric_limits<int>::max();

// beta_W (Eq. 8) without the block slots: whole blocks in the SM's warp slots.
int warpLimit(const DeviceLimits &limits, const KernelResources &kernel, int warpsPerBlock) {
  if (kernel.threadsPerBlock > limits.maxThreadsPerBlock)
    return 0;
  return limits.warpsPerSm() / warpsPerBlock;
}

// beta_R (Eqs. 5-7): whole blocks in the warps the register file holds, zero
// when one block breaks the per-thread or per-block register limit.
int registerLimit(const DeviceLimits &limits, const KernelResources &kernel, int warpsPerBlock) {
  if (!blockFitsRegisterLimits(limits, kernel.registersPerThread, warpsPerBlock))
    return 0;
  if (registerUnitsPerWarp(limits, kernel.registersPerThread) == 0)
    return kUnlimited;
  return warpsAllowedByRegisters(limits, kernel.registersPerThread) / warpsPerBlock;
}

// beta_S (Eq. 3): zero when a block asks for more than the per-block maximum,
// unlimited when it takes no shared memory at all (no reserve either).
int sharedMemoryLimit(const DeviceLimits &limits, const KernelResources &kernel) {
  if (!sharedMemoryFitsBlock(limits, kernel.sharedMemoryPerBlock))
    return 0;
  const int perBlock = sharedMemoryPerBlock(limits, kernel.sharedMemoryPerBlock);
  if (perBlock == 0)
    return kUnlimited;
  return limits.sharedMemoryPerSm / perBlock;
}

void validate(const KernelResources &kernel) {
  if (kernel.threadsPerBlock <= 0)
    throw std::invalid_argument("kernelopt: threadsPerBlock must be positive");
  if (kernel.registersPerThread < 0)
    throw std::invalid_argument("kernelopt: registersPerThread must be >= 0");
  if (kernel.sharedMemoryPerBlock < 0)
    throw std::invalid_argument("kernelopt: sharedMemoryPerBlock must be >= 0");
}

} // namespace

double Occupancy::fraction(const DeviceLimits &limits) const {
  return static_cast<double>(activeWarpsPerSm()) / limits.warpsPerSm();
}

Occupancy computeOccupancy(const DeviceLimits &limits, const KernelResources &kernel) {
  kernelopt::validate(limits);
  validate(kernel);
  Occupancy result;
  result.warpsPerBlock = ceilDiv(kernel.threadsPerBlock, limits.warpSize);
  result.allocatedRegistersPerBlock = registersPerWarp(limits, kernel.registersPerThread) * result.warpsPerBlock;
  result.allocatedSharedMemoryPerBlock = sharedMemoryPerBlock(limits, kernel.sharedMemoryPerBlock);
  result.blockLimitWarps = warpLimit(limits, kernel, result.warpsPerBlock);
  result.blockLimitRegisters = registerLimit(limits, kernel, result.warpsPerBlock);
  result.blockLimitSharedMemory = sharedMemoryLimit(limits, kernel);
  result.blockLimitBlocks = limits.maxBlocksPerSm;
  result.activeBlocksPerSm = std::min(
      {result.blockLimitWarps, result.blockLimitRegisters, result.blockLimitSharedMemory, result.blockLimitBlocks});
  const int beta = result.activeBlocksPerSm;
  if (beta == result.blockLimitWarps)
    result.limitingFactors.add(Resource::Warps);
  if (beta == result.blockLimitRegisters)
    result.limitingFactors.add(Resource::Registers);
  if (beta == result.blockLimitSharedMemory)
    result.limitingFactors.add(Resource::SharedMemory);
  if (beta == result.blockLimitBlocks)
    result.limitingFactors.add(Resource::Blocks);
  return result;
}

std::optional<std::int64_t> runningRounds(const DeviceLimits &limits, const Occupancy &occupancy, std::int64_t blocks) {
  if (occupancy.activeBlocksPerSm <= 0)
    return std::nullopt;
  const std::int64_t perRound = static_cast<std::int64_t>(occupancy.activeBlocksPerSm) * limits.smCount;
  return (blocks + perRound - 1) / perRound;
}

} // namespace mqx::kernelopt
