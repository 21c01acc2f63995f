// The DeviceBackend conformance suite (device/device_backend.hpp): one set of
// tests that every backend must pass, the contract the core relies on
// (ranges and mappings, host blocks, copies and fills, stream order and
// fences, errors on bad input). backend_conformance.cpp holds the tests; each
// backend instantiates them with a maker:
//
//   INSTANTIATE_TEST_SUITE_P(Sim, BackendConformance, ::testing::Values(simMaker()), backendName);
//
// on the simulated device in mqx_unit_tests (CI), on the GPU in the GPU suite
// (tests/gpu, label gpu).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "device/device_backend.hpp"

namespace mqx::device::conformance {

// How to make the backend under test, fresh for each test; null, with the
// reason in `why`, where it cannot be made (no GPU): the test is skipped.
struct BackendMaker {
  std::string name; // the instantiation's, in the test names
  std::function<std::unique_ptr<DeviceBackend>(std::string* why)> make;
};

std::string backendName(const ::testing::TestParamInfo<BackendMaker>& info);
// Its name, so that the tests' names are the same on every run (ctest's,
// from --gtest_list_tests, show the parameter).
void PrintTo(const BackendMaker& maker, std::ostream* out);

class BackendConformance : public ::testing::TestWithParam<BackendMaker> {
protected:
  void SetUp() override;
  // Everything a test left reserved or mapped goes back, mappings first.
  void TearDown() override;

  DeviceBackend& backend() { return *backend_; }
  std::size_t granule() const { return granularity_; }
  // A reservation of `granules` granules, released at the end of the test.
  DevicePtr reserve(std::size_t granules);
  // Maps [address, address + bytes); unmapped at the end of the test unless
  // the test unmaps it first (forget()).
  Status map(DevicePtr address, std::size_t bytes);
  void forget(DevicePtr address);
  // A mapping made otherwise than through map() (mapShared): unmapped at
  // the end as map()'s are.
  void track(DevicePtr address, std::size_t bytes) { mappings_.emplace_back(address, bytes); }
  // `count` host blocks of one granule each. Skips the test where the
  // backend cannot map host memory under its ranges, fails it where
  // creating them failed: the caller returns when IsSkipped() or
  // HasFatalFailure().
  void createHostBlocks(std::size_t count, std::vector<HostBlock>* blocks);
  // Copies `bytes` at `address` to the host through the backend and waits.
  std::vector<unsigned char> read(DevicePtr address, std::size_t bytes);
  // Copies `bytes` to `address` through the backend and waits.
  void write(DevicePtr address, const std::vector<unsigned char>& bytes);

private:
  std::unique_ptr<DeviceBackend> backend_;
  std::size_t granularity_ = 0;
  std::vector<std::pair<DevicePtr, std::size_t>> reservations_;
  std::vector<std::pair<DevicePtr, std::size_t>> mappings_;
};

} // namespace mqx::device::conformance
