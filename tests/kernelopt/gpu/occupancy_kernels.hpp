// The kernels the occupancy GPU test compares on (occupancy_kernels.cu).
#pragma once

#include <vector>

struct OccupancyKernel {
  const char *name;
  const void *symbol; // the host stub, for cudaFuncGetAttributes and cudaGetFuncBySymbol
  std::vector<int> dynamicSharedBytes;
};

std::vector<OccupancyKernel> occupancyKernels(int optinSharedBytes);
