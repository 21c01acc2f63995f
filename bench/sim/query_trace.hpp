// A synthetic, query-like workload for the simulated device: several queries
// of operator-at-a-time plans (selection, projection, probe, aggregation) over
// input columns copied from host memory, intermediates materialised on the
// device, results copied back; queries interleave operator by operator as
// co-running queries do. Every result is checked against a host reference.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "core/statistics.hpp"
#include "device/sim/sim_backend.hpp"

namespace mqx::bench {

struct TraceShape {
  int queries = 4;
  int repetitions = 2;         // each query runs this many times over the same inputs
  std::size_t columnMiB = 40;  // average input column size
  std::uint64_t seed = 7;
};

struct TraceResult {
  std::string name;
  bool correct = false;
  std::string error;
  Statistics statistics;
  device::SimTransferTotals transfers;
  double wallSeconds = 0;
};

TraceResult runTrace(const std::string& name, const Config& config, const TraceShape& shape);

} // namespace mqx::bench
