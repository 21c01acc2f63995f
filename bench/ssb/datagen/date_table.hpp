// The date dimension: one row per day of the SSB calendar, with every column
// of the specification derived from the date itself (no randomness).
#pragma once

#include "ssb/datagen/generated_table.hpp"

namespace mqx::ssb {

GeneratedTable generateDateTable();

} // namespace mqx::ssb
