// kernelopt's occupancy model (docs/kernelopt.md §2) against the driver's
// cuOccupancyMaxActiveBlocksPerMultiprocessor on the GPU at hand: real
// kernels with different register counts and static and dynamic shared
// memory, every block size from 32 to 1024 in steps of 32. Prints the
// comparison as a table; exits 1 on any mismatch, 77 without a GPU.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernelopt/cudart_device_attributes.hpp"
#include "kernelopt/device_limits.hpp"
#include "kernelopt/occupancy.hpp"
#include "occupancy_kernels.hpp"

namespace {

using OccupancyFunction = CUresult (*)(int *, CUfunction, int, size_t);

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess) {
    std::printf("cudaGetDeviceProperties failed\n");
    return 1;
  }
  // The driver's own entry point, whatever cudart wraps it in.
  OccupancyFunction driverOccupancy = nullptr;
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  const cudaError_t lookup =
      cudaGetDriverEntryPointByVersion("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                       reinterpret_cast<void **>(&driverOccupancy), 12000, cudaEnableDefault, &found);
#else
  const cudaError_t lookup =
      cudaGetDriverEntryPoint("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                              reinterpret_cast<void **>(&driverOccupancy), cudaEnableDefault, &found);
#endif
  if (lookup != cudaSuccess || driverOccupancy == nullptr) {
    std::printf("cuOccupancyMaxActiveBlocksPerMultiprocessor not found\n");
    return 1;
  }
  const mqx::kernelopt::DeviceAttributes attributes = mqx::kernelopt::deviceAttributesOf(properties);
  const auto limits = mqx::kernelopt::DeviceLimits::fromAttributes(attributes);
  std::printf("device: %s (sm_%d%d, %d SMs)\n", properties.name, attributes.computeCapabilityMajor,
              attributes.computeCapabilityMinor, attributes.multiprocessorCount);

  const int optin = attributes.maxSharedMemoryPerBlockOptin;
  const std::vector<OccupancyKernel> cases = occupancyKernels(optin);
  int compared = 0, mismatches = 0;
  std::printf("%-16s %5s %8s %8s %6s %6s %6s\n", "kernel", "regs", "shared", "block", "model", "driver", "");
  for (const OccupancyKernel &c : cases) {
    // Dynamic shared memory beyond 48 KiB needs the opt-in attribute.
    cudaFuncAttributes function{};
    cudaFuncGetAttributes(&function, c.symbol);
    cudaFuncSetAttribute(c.symbol, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         optin - static_cast<int>(function.sharedSizeBytes));
    cudaFuncGetAttributes(&function, c.symbol);
    cudaFunction_t handle = nullptr;
    if (cudaGetFuncBySymbol(&handle, c.symbol) != cudaSuccess) {
      std::printf("%s: no function handle\n", c.name);
      return 1;
    }
    for (int dynamic : c.dynamicSharedBytes) {
      if (static_cast<int>(function.sharedSizeBytes) + dynamic > optin)
        continue;
      for (int block = 32; block <= 1024; block += 32) {
        if (block > function.maxThreadsPerBlock)
          continue;
        int driver = -1;
        if (driverOccupancy(&driver, reinterpret_cast<CUfunction>(handle), block, static_cast<size_t>(dynamic)) !=
            CUDA_SUCCESS) {
          std::printf("%s: cuOccupancyMaxActiveBlocksPerMultiprocessor failed at block %d\n", c.name, block);
          return 1;
        }
        const int shared = static_cast<int>(function.sharedSizeBytes) + dynamic;
        const auto model = mqx::kernelopt::computeOccupancy(limits, {function.numRegs, shared, block});
        const bool same = model.activeBlocksPerSm == driver;
        ++compared;
        if (!same)
          ++mismatches;
        std::printf("%-16s %5d %8d %8d %6d %6d %6s\n", c.name, function.numRegs, shared, block, model.activeBlocksPerSm,
                    driver, same ? "" : "DIFF");
      }
    }
  }
  std::printf("%d comparisons, %d mismatches\n", compared, mismatches);
  return mismatches == 0 ? 0 : 1;
}
