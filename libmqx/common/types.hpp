// Vocabulary shared by the core, the policies and the backends.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mqx {

// A device virtual address (CUdeviceptr on the GPU, a host address on sim).
using DevicePtr = std::uint64_t;

// An opaque stream handle as the application knows it (CUstream on the GPU).
// 0 is the default stream.
using StreamHandle = std::uintptr_t;

// An opaque kernel handle (CUfunction on the GPU, a registered host function
// on sim).
using FunctionHandle = std::uintptr_t;

// How the next kernel launch touches a region (cudaAdvice, paper §4.1 and §6).
enum class Access : std::uint8_t {
  None = 0,
  Input = 1,  // read: must be loaded before the launch
  Output = 2, // written only: needs backing but no load
  Both = 3,
};

constexpr Access operator|(Access a, Access b) noexcept {
  return static_cast<Access>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
constexpr bool reads(Access a) noexcept { return (static_cast<std::uint8_t>(a) & 1U) != 0; }
constexpr bool writes(Access a) noexcept { return (static_cast<std::uint8_t>(a) & 2U) != 0; }

constexpr std::size_t roundUp(std::size_t value, std::size_t multiple) noexcept {
  return (value + multiple - 1) / multiple * multiple;
}

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;
constexpr std::size_t kGiB = 1024 * kMiB;

} // namespace mqx
