// Seeded random devices and kernels for the randomised tests. Every test
// prints the seed of a failing instance so that it can be replayed.
#pragma once

#include "kernelopt/device_limits.hpp"
#include "kernelopt/kernel_demand.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mqx::kernelopt::testing {

// A small SM (a few blocks and warps) with random granularities, so that
// exhaustive search stays cheap and every constraint binds now and then.
DeviceLimits randomToyDevice(std::mt19937_64 &rng);

// `count` kernels whose demands are drawn around the device's capacity.
std::vector<KernelDemand> randomKernels(std::mt19937_64 &rng, const DeviceLimits &limits, std::size_t count,
                                        double load);

// Kernels with small block limits, hence several launch options each
// (Theorem 1), on a device with room for many warps.
DeviceLimits randomManyOptionDevice(std::mt19937_64 &rng);
std::vector<KernelDemand> randomManyOptionKernels(std::mt19937_64 &rng, const DeviceLimits &limits);

std::string describe(const DeviceLimits &limits);
std::string describe(const std::vector<KernelDemand> &kernels);

} // namespace mqx::kernelopt::testing
