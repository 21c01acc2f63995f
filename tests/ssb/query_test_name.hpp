// The name of a test parameterized by the query: "q1.1" becomes "q1_1"
// (GoogleTest names take letters, digits and '_' only).
#pragma once

#include "ssb/reference/query_catalog.hpp"

#include <gtest/gtest.h>

#include <string>

namespace mqx::ssb::test {

inline std::string queryTestName(const ::testing::TestParamInfo<QueryId> &info) {
  std::string name(queryName(info.param));
  name[2] = '_';
  return name;
}

} // namespace mqx::ssb::test
