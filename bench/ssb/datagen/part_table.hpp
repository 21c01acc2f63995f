// The part dimension: p_partkey 1..rows; manufacturer 1..5, category 1..5
// within it and brand 1..40 within the category, each uniform, so a category
// is 1/25 of the parts and a brand 1/1000; colour, type, size 1..50 and
// container uniform over their TPC-H domains.
#pragma once

#include "ssb/datagen/generated_table.hpp"

#include <cstdint>

namespace mqx::ssb {

GeneratedTable generatePartTable(std::int64_t rows, std::uint64_t seed);

} // namespace mqx::ssb
