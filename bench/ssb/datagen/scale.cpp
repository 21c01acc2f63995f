#include "ssb/datagen/scale.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mqx::ssb {
namespace {

std::int64_t scaled(double base, double scaleFactor) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(base * scaleFactor)));
}

} // namespace

Cardinalities cardinalitiesFor(double scaleFactor) {
  if (!(scaleFactor > 0.0) || scaleFactor > kMaxScaleFactor)
    throw std::invalid_argument("scale factor must be in (0, " + std::to_string(kMaxScaleFactor) +
                                "], got " + std::to_string(scaleFactor));
  Cardinalities result;
  result.orders = scaled(1'500'000, scaleFactor);
  result.customers = scaled(30'000, scaleFactor);
  result.suppliers = scaled(2'000, scaleFactor);
  result.parts =
      scaleFactor < 1.0
          ? scaled(200'000, scaleFactor)
          : 200'000 * static_cast<std::int64_t>(std::floor(1.0 + std::log2(scaleFactor)));
  return result;
}

} // namespace mqx::ssb
