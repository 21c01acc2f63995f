#include "random_instances.hpp"

#include <algorithm>
#include <sstream>

namespace mqx::kernelopt::testing {

namespace {

int uniform(std::mt19937_64 &rng, int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); }

template <typename T> T pick(std::mt19937_64 &rng, std::initializer_list<T> values) {
  return *(values.begin() + uniform(rng, 0, static_cast<int>(values.size()) - 1));
}

} // namespace

DeviceLimits randomToyDevice(std::mt19937_64 &rng) {
  DeviceLimits l;
  l.name = "toy";
  l.computeCapability = 90;
  l.smCount = uniform(rng, 1, 3);
  l.warpSize = 32;
  l.maxThreadsPerBlock = 32 * uniform(rng, 1, 8);
  const int warps = uniform(rng, 2, 16);
  l.maxThreadsPerSm = 32 * warps;
  l.maxWarpsPerSm = uniform(rng, 0, 3) == 0 ? warps + uniform(rng, 0, 4) : warps;
  l.maxBlocksPerSm = uniform(rng, 1, 8);
  l.registerAllocationUnit = 256;
  l.registerPartitions = pick(rng, {1, 1, 2, 4});
  l.registersPerSm = l.registerPartitions * 256 * uniform(rng, 2, 24);
  l.maxRegistersPerBlock = uniform(rng, 0, 1) ? l.registersPerSm : l.registersPerSm / 2;
  l.maxRegistersPerThread = pick(rng, {63, 255});
  l.sharedMemoryAllocationUnit = pick(rng, {128, 256});
  l.reservedSharedMemoryPerBlock = pick(rng, {0, 0, 128, 1024});
  l.sharedMemoryPerSm = 1024 * uniform(rng, 2, 32);
  l.maxSharedMemoryPerBlock =
      std::max(0, l.sharedMemoryPerSm - l.reservedSharedMemoryPerBlock - 128 * uniform(rng, 0, 8));
  return l;
}

std::vector<KernelDemand> randomKernels(std::mt19937_64 &rng, const DeviceLimits &limits, std::size_t count,
                                        double load) {
  const int slots = std::min(limits.maxWarpsPerSm, limits.maxThreadsPerSm / limits.warpSize);
  const long long capacity = static_cast<long long>(slots) * limits.warpSize * limits.smCount;
  const long long mean = std::max<long long>(1, static_cast<long long>(capacity * load / count));
  std::vector<KernelDemand> kernels(count);
  for (KernelDemand &k : kernels) {
    k.threads = std::uniform_int_distribution<long long>(1, 2 * mean)(rng);
    // Up to half a register partition per warp, so that registers bind often
    // but not always.
    const int registerUnits = limits.registersPerSm / limits.registerPartitions / limits.registerAllocationUnit;
    const int unitThreads = limits.registerAllocationUnit / limits.warpSize;
    k.registersPerThread = uniform(rng, 0, 5) == 0 ? 0 : uniform(rng, 1, std::max(1, registerUnits / 2) * unitThreads);
    const int smemUnits = std::max(1, limits.sharedMemoryPerSm / 128 / 3);
    k.sharedMemoryPerBlock = uniform(rng, 0, 2) == 0 ? 0 : 128 * uniform(rng, 0, smemUnits) - uniform(rng, 0, 64);
    k.sharedMemoryPerBlock = std::max(0, k.sharedMemoryPerBlock);
    // Small block limits give kernels several launch options (Theorem 1).
    k.maxThreadsPerBlock = uniform(rng, 0, 1) == 0 ? 32 * uniform(rng, 1, 4) : 0;
  }
  return kernels;
}

DeviceLimits randomManyOptionDevice(std::mt19937_64 &rng) {
  DeviceLimits l = randomToyDevice(rng);
  const int warps = uniform(rng, 8, 16);
  l.maxThreadsPerSm = 32 * warps;
  l.maxWarpsPerSm = warps;
  l.maxBlocksPerSm = uniform(rng, 4, 8);
  l.registerPartitions = pick(rng, {1, 2});
  l.registersPerSm = l.registerPartitions * 256 * uniform(rng, 4, 64);
  l.maxRegistersPerBlock = 65536;
  l.maxRegistersPerThread = 255;
  return l;
}

std::vector<KernelDemand> randomManyOptionKernels(std::mt19937_64 &rng, const DeviceLimits &limits) {
  const std::size_t count = static_cast<std::size_t>(uniform(rng, 2, 4));
  const int warps = limits.maxWarpsPerSm;
  std::vector<KernelDemand> kernels(count);
  for (KernelDemand &k : kernels) {
    k.maxThreadsPerBlock = 32 * uniform(rng, 1, 3);
    k.threads = static_cast<long long>(limits.smCount) * uniform(rng, 33, 32 * warps / static_cast<int>(count));
    k.registersPerThread = uniform(rng, 8, 40);
    // Shared memory on every block, so that Algorithm 1 strictly prefers
    // fewer, wider blocks, which use more warps and registers.
    k.sharedMemoryPerBlock = 128 * uniform(rng, 1, 8);
  }
  return kernels;
}

std::string describe(const DeviceLimits &l) {
  std::ostringstream out;
  out << l.name << ": sms=" << l.smCount << " threads/block=" << l.maxThreadsPerBlock
      << " threads/sm=" << l.maxThreadsPerSm << " warps/sm=" << l.maxWarpsPerSm << " blocks/sm=" << l.maxBlocksPerSm
      << " regs/sm=" << l.registersPerSm << " regs/block=" << l.maxRegistersPerBlock
      << " regs/thread=" << l.maxRegistersPerThread << " partitions=" << l.registerPartitions
      << " smem/sm=" << l.sharedMemoryPerSm << " smem/block=" << l.maxSharedMemoryPerBlock
      << " smem unit=" << l.sharedMemoryAllocationUnit << " reserved=" << l.reservedSharedMemoryPerBlock;
  return out.str();
}

std::string describe(const std::vector<KernelDemand> &kernels) {
  std::ostringstream out;
  for (const KernelDemand &k : kernels)
    out << "{threads=" << k.threads << " regs=" << k.registersPerThread << " smem=" << k.sharedMemoryPerBlock
        << " maxThreads=" << k.maxThreadsPerBlock << "} ";
  return out.str();
}

} // namespace mqx::kernelopt::testing
