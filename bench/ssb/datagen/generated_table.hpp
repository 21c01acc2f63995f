// A dimension table as the generator produces it: the columns in memory and
// the dictionaries their codes refer to, ready for writeTable().
#pragma once

#include "ssb/common/columnar_table.hpp"
#include "ssb/common/table_writer.hpp"

namespace mqx::ssb {

struct GeneratedTable {
  ColumnarTable table;
  DictionaryMap dictionaries;
};

} // namespace mqx::ssb
