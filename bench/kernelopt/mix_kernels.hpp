// The hash-join phases of the knapsack paper's queries (build, scan,
// probe) as CUDA kernels written with grid-stride loops, so that any grid
// and block size computes the same result (mix_kernels.cu, nvcc, C++17).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

enum class Phase { Build, Scan, Probe };

// One kernel of a mix and its device data.
struct PhaseKernel {
  Phase phase = Phase::Scan;
  int elements = 0;
  std::uint32_t *input = nullptr; // keys (build, probe) or values (scan)
  std::uint32_t *table = nullptr; // hash table of `capacity` slots (build, probe)
  int capacity = 0;
  unsigned long long *counter = nullptr; // matches (probe) or selected rows (scan)
};

// The kernel's host stub, for cudaFuncGetAttributes.
const void *phaseSymbol(Phase phase);
void launchPhase(const PhaseKernel &kernel, unsigned grid, unsigned block, cudaStream_t stream);
