// Allocation rules: how much of an SM's register file and shared memory one
// warp or one block actually takes, after the hardware's rounding. These are
// the rules of CUDA's occupancy calculator (cuda_occupancy.h) and of the
// cuda-streams paper, §III-A, Eqs. (3)-(7); the occupancy model and the
// optimizers both count resources through them so that they agree.
#pragma once

#include "kernelopt/device_limits.hpp"

namespace mqx::kernelopt {

// Registers one warp takes: registers/thread x warp size, rounded up to the
// allocation unit (theta, Eq. 7).
int registersPerWarp(const DeviceLimits &limits, int registersPerThread);

// The same in allocation units (0 for a kernel that uses no registers).
int registerUnitsPerWarp(const DeviceLimits &limits, int registersPerThread);

// Register units `warps` resident warps of one kernel take from the SM:
// the kernel's share of the register constraint of several kernels (knapsack
// paper, Eq. 2, with the per-warp rounding of Eq. 7).
int registerUnitsForWarps(const DeviceLimits &limits, int registersPerThread, int warps);

// Warps of one kernel the register file holds (delta, Eq. 6): every
// sub-partition holds floor(units per partition / units per warp) of them.
// 0 when the kernel needs more registers per thread than the device allows.
int warpsAllowedByRegisters(const DeviceLimits &limits, int registersPerThread);

// Whether one block of `warps` warps passes the per-thread and per-block
// register checks of cudaOccMaxBlocksPerSMRegsLimit (the hardware check
// rounds the block's warps up to the number of partitions).
bool blockFitsRegisterLimits(const DeviceLimits &limits, int registersPerThread, int warps);

// The largest block, in warps, that the per-block limits allow: threads per
// block and registers per block (the hardware check rounds the block's warps
// up to the number of partitions). 0 when no block can launch.
int largestBlockWarps(const DeviceLimits &limits, int registersPerThread);

// Shared memory one block takes from its SM: the requested bytes (static and
// dynamic) plus the driver's reserve, rounded up to the allocation unit.
int sharedMemoryPerBlock(const DeviceLimits &limits, int requestedBytes);

// Whether a block may request this much shared memory at all (the opt-in
// per-block maximum, to which the calculator adds the reserve on sm_80+).
bool sharedMemoryFitsBlock(const DeviceLimits &limits, int requestedBytes);

int ceilDiv(int numerator, int denominator);
int roundUp(int value, int unit);

} // namespace mqx::kernelopt
