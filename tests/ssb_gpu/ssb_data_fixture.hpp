// The SSB GPU tests' data: the SF 0.1 directory the fixture test generated
// (MQX_SSB_GPU_TEST_DATA), opened once per test suite. The cache outlives
// every test (the simulated device's lazy copies read its columns until the
// device goes). Without the variable, cache_ stays null and each test fails
// on its ASSERT_NE(cache_, nullptr).
#pragma once

#include "ssb/common/column_cache.hpp"
#include "ssb/common/ssb_data.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

namespace mqx::ssb::gpu {

class SsbDataTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const char* dir = std::getenv("MQX_SSB_GPU_TEST_DATA");
    if (dir == nullptr) return;
    data_ = std::make_unique<SsbData>(SsbData::open(dir));
    cache_ = std::make_unique<ColumnCache>(*data_);
  }
  static void TearDownTestSuite() {
    cache_.reset();
    data_.reset();
  }

  static inline std::unique_ptr<ColumnCache> cache_;

private:
  static inline std::unique_ptr<SsbData> data_;
};

} // namespace mqx::ssb::gpu
