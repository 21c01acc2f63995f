// The values a predicate accepts: the union of two inclusive ranges. One
// range covers =, BETWEEN and <; two cover the IN / OR pairs of Q3.3 and
// Q4.x. An empty range (low > high) accepts nothing. Plain C++17 and usable
// in kernels, because the selection operator receives it by value.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MQX_SSB_HOST_DEVICE __host__ __device__
#else
#define MQX_SSB_HOST_DEVICE
#endif

namespace mqx::ssb::gpu {

struct ValueSet {
  std::int32_t low[2];
  std::int32_t high[2];

  static ValueSet range(std::int32_t low, std::int32_t high) { return {{low, low}, {high, high}}; }
  static ValueSet equal(std::int32_t value) { return range(value, value); }
  static ValueSet either(std::int32_t a, std::int32_t b) { return {{a, b}, {a, b}}; }
  MQX_SSB_HOST_DEVICE bool contains(std::int32_t v) const {
    return (low[0] <= v && v <= high[0]) || (low[1] <= v && v <= high[1]);
  }
};

} // namespace mqx::ssb::gpu
