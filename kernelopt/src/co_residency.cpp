#include "kernelopt/co_residency.hpp"

#include "kernelopt/allocation.hpp"

namespace mqx::kernelopt {

ResourceSet exceededBy(const DeviceLimits &limits, std::span<const ResidentBlocks> resident) {
  ResourceSet exceeded;
  long long blocks = 0, warps = 0, registerUnits = 0, sharedMemory = 0;
  for (const ResidentBlocks &entry : resident) {
    const KernelResources &kernel = entry.kernel;
    const int warpsPerBlock = ceilDiv(kernel.threadsPerBlock, limits.warpSize);
    if (kernel.threadsPerBlock > limits.maxThreadsPerBlock)
      exceeded.add(Resource::Warps);
    if (!blockFitsRegisterLimits(limits, kernel.registersPerThread, warpsPerBlock))
      exceeded.add(Resource::Registers);
    if (!sharedMemoryFitsBlock(limits, kernel.sharedMemoryPerBlock))
      exceeded.add(Resource::SharedMemory);
    blocks += entry.blocks;
    warps += static_cast<long long>(entry.blocks) * warpsPerBlock;
    const int kernelWarps = entry.blocks * warpsPerBlock;
    if (kernelWarps > warpsAllowedByRegisters(limits, kernel.registersPerThread))
      exceeded.add(Resource::Registers);
    registerUnits += registerUnitsForWarps(limits, kernel.registersPerThread, kernelWarps);
    sharedMemory += static_cast<long long>(entry.blocks) * sharedMemoryPerBlock(limits, kernel.sharedMemoryPerBlock);
  }
  if (blocks > limits.maxBlocksPerSm)
    exceeded.add(Resource::Blocks);
  if (warps > limits.warpsPerSm())
    exceeded.add(Resource::Warps);
  if (registerUnits > limits.registerUnitsPerSm())
    exceeded.add(Resource::Registers);
  if (sharedMemory > limits.sharedMemoryPerSm)
    exceeded.add(Resource::SharedMemory);
  return exceeded;
}

} // namespace mqx::kernelopt
