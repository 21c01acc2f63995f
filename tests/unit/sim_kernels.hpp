// Simulated kernels shared by the unit and differential tests, with the
// reference computation each one stands for.
#pragma once

#include <cstdint>
#include <cstring>

#include "device/sim/sim_backend.hpp"

namespace mqx::test {

// out[i] = in[i] * 3 + seed for i < n. In place when in == out.
inline void transformReference(const std::uint8_t* in, std::uint8_t* out, std::uint64_t n, std::uint8_t seed) {
  for (std::uint64_t i = 0; i < n; ++i)
    out[i] = static_cast<std::uint8_t>(in[i] * 3 + seed);
}

// A struct parameter that carries pointers, as query operators pass them.
struct XorArguments {
  std::uint8_t* source;
  std::uint8_t* target;
  std::uint64_t n;
};

inline void xorReference(const std::uint8_t* source, std::uint8_t* target, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i)
    target[i] ^= source[i];
}

// A pointer table in device memory: what batched BLAS and gather kernels
// read their operands through. Only the table's address is a parameter.
struct IndirectTable {
  std::uint8_t* source;
  std::uint8_t* target;
  std::uint64_t n;
  std::uint64_t seed;
};

struct SimKernels {
  FunctionHandle transform;
  FunctionHandle xorStruct;
  FunctionHandle indirectTransform; // transform(table->source, table->target) through a table

  explicit SimKernels(device::SimBackend& backend) {
    transform = backend.registerKernel(
        [](const device::SimKernelContext&, void** params) {
          auto* in = *static_cast<std::uint8_t**>(params[0]);
          auto* out = *static_cast<std::uint8_t**>(params[1]);
          auto n = *static_cast<std::uint64_t*>(params[2]);
          auto seed = *static_cast<std::uint8_t*>(params[3]);
          transformReference(in, out, n, seed);
        },
        {{0, 8}, {8, 8}, {16, 8}, {24, 1}});
    xorStruct = backend.registerKernel(
        [](const device::SimKernelContext&, void** params) {
          XorArguments arguments;
          std::memcpy(&arguments, params[0], sizeof arguments);
          xorReference(arguments.source, arguments.target, arguments.n);
        },
        {{0, sizeof(XorArguments)}});
    indirectTransform = backend.registerKernel(
        [](const device::SimKernelContext&, void** params) {
          IndirectTable table;
          std::memcpy(&table, *static_cast<const void**>(params[0]), sizeof table);
          transformReference(table.source, table.target, table.n, static_cast<std::uint8_t>(table.seed));
        },
        {{0, 8}});
  }
};

} // namespace mqx::test
