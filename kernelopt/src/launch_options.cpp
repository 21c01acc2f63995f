#include "kernelopt/launch_options.hpp"

#include "kernelopt/allocation.hpp"

#include <algorithm>
#include <stdexcept>

namespace mqx::kernelopt {

std::int64_t threadsPerSm(const DeviceLimits &limits, const KernelDemand &kernel) {
  return (kernel.threads + limits.smCount - 1) / limits.smCount;
}

void validate(const KernelDemand &kernel) {
  if (kernel.threads <= 0)
    throw std::invalid_argument("kernelopt: a kernel must demand at least one thread");
  if (kernel.registersPerThread < 0)
    throw std::invalid_argument("kernelopt: registersPerThread must be >= 0");
  if (kernel.sharedMemoryPerBlock < 0)
    throw std::invalid_argument("kernelopt: sharedMemoryPerBlock must be >= 0");
  if (kernel.maxThreadsPerBlock < 0)
    throw std::invalid_argument("kernelopt: maxThreadsPerBlock must be >= 0");
}

namespace {

// The largest w_i the per-block limits allow for this kernel.
int maxWarpsPerBlock(const DeviceLimits &limits, const KernelDemand &kernel) {
  int warps = largestBlockWarps(limits, kernel.registersPerThread);
  if (kernel.maxThreadsPerBlock > 0)
    warps = std::min(warps, kernel.maxThreadsPerBlock / limits.warpSize);
  return warps;
}

LaunchOption makeOption(const DeviceLimits &limits, const KernelDemand &kernel, std::int64_t demand, int blocks) {
  LaunchOption option;
  option.blocksPerSm = blocks;
  const std::int64_t threadsPerBlock = static_cast<std::int64_t>(limits.warpSize) * blocks;
  option.warpsPerBlock = static_cast<int>((demand + threadsPerBlock - 1) / threadsPerBlock);
  option.warps = blocks * option.warpsPerBlock;
  option.registerUnits = registerUnitsForWarps(limits, kernel.registersPerThread, option.warps);
  option.fitsRegisterFile = option.warps <= warpsAllowedByRegisters(limits, kernel.registersPerThread);
  option.sharedMemory = blocks * sharedMemoryPerBlock(limits, kernel.sharedMemoryPerBlock);
  return option;
}

ResourceSet perBlockObstacles(const DeviceLimits &limits, const KernelDemand &kernel, int warpLimit) {
  ResourceSet obstacles;
  if (warpLimit <= 0)
    obstacles.add(Resource::Registers);
  if (!sharedMemoryFitsBlock(limits, kernel.sharedMemoryPerBlock))
    obstacles.add(Resource::SharedMemory);
  return obstacles;
}

} // namespace

LaunchOption launchOptionFor(const DeviceLimits &limits, const KernelDemand &kernel, int blocksPerSm) {
  const std::int64_t demand = threadsPerSm(limits, kernel);
  const int warpLimit = maxWarpsPerBlock(limits, kernel);
  if (blocksPerSm <= 0 || warpLimit <= 0)
    return {};
  if (demand > static_cast<std::int64_t>(blocksPerSm) * warpLimit * limits.warpSize)
    return {};
  return makeOption(limits, kernel, demand, blocksPerSm);
}

ResourceSet appendLaunchOptions(const DeviceLimits &limits, const KernelDemand &kernel,
                                std::vector<LaunchOption> &out) {
  validate(kernel);
  const int warpLimit = maxWarpsPerBlock(limits, kernel);
  ResourceSet obstacles = perBlockObstacles(limits, kernel, warpLimit);
  if (!obstacles.empty())
    return obstacles;

  const std::int64_t demand = threadsPerSm(limits, kernel);
  const int slotWarps = limits.warpsPerSm();
  // ceil(c / 32) warps are needed whatever the blocks: beyond the warp slots
  // no option exists, and b must be large enough for w_i <= warpLimit.
  if ((demand + limits.warpSize - 1) / limits.warpSize > slotWarps)
    return Resource::Warps;
  const std::int64_t perMaxBlock = static_cast<std::int64_t>(warpLimit) * limits.warpSize;
  const int firstBlocks = static_cast<int>((demand + perMaxBlock - 1) / perMaxBlock);
  const std::size_t before = out.size();
  int fewestWarps = slotWarps + 1;
  for (int blocks = firstBlocks; blocks <= limits.maxBlocksPerSm; ++blocks) {
    const LaunchOption option = makeOption(limits, kernel, demand, blocks);
    if (option.warps < fewestWarps) {
      out.push_back(option);
      fewestWarps = option.warps;
    }
    // With one warp per block, more blocks only add warps.
    if (option.warpsPerBlock == 1)
      break;
  }
  if (out.size() == before) {
    obstacles.add(Resource::Blocks);
    if (firstBlocks <= limits.maxBlocksPerSm)
      obstacles.add(Resource::Warps);
  }
  return obstacles;
}

LaunchOptions launchOptions(const DeviceLimits &limits, const KernelDemand &kernel) {
  LaunchOptions result;
  result.obstacles = appendLaunchOptions(limits, kernel, result.options);
  return result;
}

} // namespace mqx::kernelopt
