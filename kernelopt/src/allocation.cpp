#include "kernelopt/allocation.hpp"

#include <algorithm>

namespace mqx::kernelopt {

int ceilDiv(int numerator, int denominator) { return (numerator + denominator - 1) / denominator; }

int roundUp(int value, int unit) { return ceilDiv(value, unit) * unit; }

int registersPerWarp(const DeviceLimits &limits, int registersPerThread) {
  return roundUp(registersPerThread * limits.warpSize, limits.registerAllocationUnit);
}

int registerUnitsPerWarp(const DeviceLimits &limits, int registersPerThread) {
  return registersPerWarp(limits, registersPerThread) / limits.registerAllocationUnit;
}

int registerUnitsForWarps(const DeviceLimits &limits, int registersPerThread, int warps) {
  return warps * registerUnitsPerWarp(limits, registersPerThread);
}

int warpsAllowedByRegisters(const DeviceLimits &limits, int registersPerThread) {
  if (registersPerThread > limits.maxRegistersPerThread)
    return 0;
  const int unitsPerWarp = registerUnitsPerWarp(limits, registersPerThread);
  if (unitsPerWarp == 0)
    return limits.warpsPerSm();
  return limits.registerUnitsPerPartition() / unitsPerWarp * limits.registerPartitions;
}

bool blockFitsRegisterLimits(const DeviceLimits &limits, int registersPerThread, int warps) {
  if (registersPerThread > limits.maxRegistersPerThread)
    return false;
  const long long perWarp = registersPerWarp(limits, registersPerThread);
  const bool hardwareCheck = perWarp * roundUp(warps, limits.registerPartitions) <= limits.maxRegistersPerBlock;
  const bool softwareCheck = perWarp * warps <= limits.maxRegistersPerBlock;
  return hardwareCheck && softwareCheck;
}

int largestBlockWarps(const DeviceLimits &limits, int registersPerThread) {
  int warps = limits.maxWarpsPerBlock();
  while (warps > 0 && !blockFitsRegisterLimits(limits, registersPerThread, warps))
    --warps;
  return warps;
}

int sharedMemoryPerBlock(const DeviceLimits &limits, int requestedBytes) {
  return roundUp(requestedBytes + limits.reservedSharedMemoryPerBlock, limits.sharedMemoryAllocationUnit);
}

bool sharedMemoryFitsBlock(const DeviceLimits &limits, int requestedBytes) {
  return sharedMemoryPerBlock(limits, requestedBytes) <=
         limits.maxSharedMemoryPerBlock + limits.reservedSharedMemoryPerBlock;
}

} // namespace mqx::kernelopt
