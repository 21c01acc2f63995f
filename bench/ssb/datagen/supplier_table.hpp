// The supplier dimension: s_suppkey 1..rows and a uniform geography.
#pragma once

#include "ssb/datagen/generated_table.hpp"

#include <cstdint>

namespace mqx::ssb {

GeneratedTable generateSupplierTable(std::int64_t rows, std::uint64_t seed);

} // namespace mqx::ssb
