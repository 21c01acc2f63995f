// The per-SM resources that bound how many blocks can be resident at once.
//
// The cuda-streams paper (§III-A, Eq. 2) names three limiting factors for one
// kernel: warps, registers and shared memory. The knapsack paper ("Overview of
// our approach") adds a fourth for several kernels: the number of resident
// blocks of all kernels together. The occupancy model reports which of them
// limit a kernel; the optimizers report which of them a set of kernels exceeds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mqx::kernelopt {

enum class Resource : std::uint8_t {
  Warps = 1,
  Registers = 2,
  SharedMemory = 4,
  Blocks = 8,
};

std::string_view toString(Resource resource) noexcept;

// A small set of resources (a bit mask), e.g. every factor that ties for the
// minimum in the occupancy calculation.
class ResourceSet {
public:
  constexpr ResourceSet() = default;
  constexpr ResourceSet(Resource resource) : bits_(static_cast<std::uint8_t>(resource)) {}

  constexpr bool contains(Resource resource) const { return (bits_ & static_cast<std::uint8_t>(resource)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr ResourceSet &add(Resource resource) {
    bits_ |= static_cast<std::uint8_t>(resource);
    return *this;
  }
  constexpr ResourceSet operator|(ResourceSet other) const {
    ResourceSet result;
    result.bits_ = static_cast<std::uint8_t>(bits_ | other.bits_);
    return result;
  }
  constexpr bool operator==(const ResourceSet &) const = default;

  // "warps|registers", or "none".
  std::string toString() const;

private:
  std::uint8_t bits_ = 0;
};

} // namespace mqx::kernelopt
