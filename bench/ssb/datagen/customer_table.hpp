// The customer dimension: c_custkey 1..rows, a uniform geography and a
// uniform market segment.
#pragma once

#include "ssb/datagen/generated_table.hpp"

#include <cstdint>

namespace mqx::ssb {

GeneratedTable generateCustomerTable(std::int64_t rows, std::uint64_t seed);

} // namespace mqx::ssb
