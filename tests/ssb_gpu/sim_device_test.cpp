// The SSB engine on the simulated device: every query's plan, operator at a
// time and fused, run by the executor on SimQueryDevice (each operator a
// host kernel launched through libmqx's MemoryManager with the CUDA
// operators' advice) under a device memory limit below the query's
// footprint, equals the CPU reference exactly; so does one query under every
// replacement policy and every ablation of the paper (§7), where the memory
// manager must still evict and reload correctly.
#include "ssb/gpu/executor.hpp"
#include "ssb/gpu/query_plan.hpp"
#include "ssb/gpu/result_decoder.hpp"
#include "ssb/gpu/sim_query_device.hpp"
#include "ssb/reference/reference_queries.hpp"
#include "ssb_data_fixture.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>
#include <ostream>
#include <string>
#include <tuple>

namespace mqx::ssb::gpu {
namespace {

// Below every query's SF 0.1 footprint once allocations are rounded to the
// 2 MiB granularity (30 to 50 MiB), above the largest kernel (about 16 MiB;
// the fused Q4.x kernel about 34 MiB): the limits of the GPU tests.
constexpr std::size_t kOperatorLimit = 24 * kMiB;
constexpr std::size_t kFusedLimit = 40 * kMiB;

// Each query on a fresh simulated device over the fixture's data.
class SimDeviceTest : public SsbDataTest {
protected:
  // A configuration that never joins a node (no mqxd runs for this
  // instance), with the given device memory limit.
  static Config aloneWithLimit(std::size_t limit) {
    Config config;
    config.deviceMemoryLimit = limit;
    config.daemonInstance = "ssb-sim-device-test-" + std::to_string(getpid());
    return config;
  }

  // Runs `query` on a fresh simulated device and checks it against the
  // reference; returns what the memory manager did.
  SimDeviceReport runAndCheck(QueryId query, Variant variant, const Config& config) {
    QueryPlan plan = planQuery(query, *cache_);
    SimQueryDevice device(config, "sim_device_test");
    EXPECT_FALSE(device.report().onNode);
    QueryRun run = runPlan(plan, *cache_, device, variant);
    QueryResult actual = decodeResult(plan, run.aggregate, *cache_);
    QueryResult expected = runReferenceQuery(query, *cache_);
    EXPECT_EQ(describeDifference(expected, actual), "") << queryName(query);
    if (query != QueryId::Q3_4) {
      EXPECT_FALSE(expected.rows.empty());
    }
    // The footprint exceeds the limit, so mqx must have evicted.
    if (run.peakDeviceBytes > config.deviceMemoryLimit + 8 * kMiB) {
      EXPECT_GT(device.report().statistics.evictions, 0u) << queryName(query);
    }
    return device.report();
  }
};

class EveryQuery : public SimDeviceTest, public ::testing::WithParamInterface<std::tuple<QueryId, Variant>> {};

TEST_P(EveryQuery, EqualsReferenceUnderLimit) {
  ASSERT_NE(cache_, nullptr) << "MQX_SSB_GPU_TEST_DATA is not set";
  auto [query, variant] = GetParam();
  SimDeviceReport report =
      runAndCheck(query, variant, aloneWithLimit(variant == Variant::Fused ? kFusedLimit : kOperatorLimit));
  EXPECT_GT(report.statistics.launches, 0u);
  // Lazy uploads: every uploaded byte was recorded, none copied at once.
  EXPECT_GT(report.statistics.bytesRequestedToDevice, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    SimDevice, EveryQuery,
    ::testing::Combine(::testing::Values(QueryId::Q1_1, QueryId::Q1_2, QueryId::Q1_3, QueryId::Q2_1, QueryId::Q2_2,
                                         QueryId::Q2_3, QueryId::Q3_1, QueryId::Q3_2, QueryId::Q3_3, QueryId::Q3_4,
                                         QueryId::Q4_1, QueryId::Q4_2, QueryId::Q4_3),
                       ::testing::Values(Variant::OperatorAtATime, Variant::Fused)),
    [](const auto& info) {
      std::string name(queryName(std::get<0>(info.param)));
      for (char& c : name)
        if (c == '.') c = '_';
      return name + (std::get<1>(info.param) == Variant::Fused ? "_fused" : "_operators");
    });

// Q4.1 (the largest footprint: five joins' intermediates) under each policy
// and each ablation, operator at a time, at the tight limit.
struct ConfigCase {
  std::string name;
  std::function<void(Config&)> apply;
};
void PrintTo(const ConfigCase& configCase, std::ostream* out) { *out << configCase.name; }

class EveryConfiguration : public SimDeviceTest, public ::testing::WithParamInterface<ConfigCase> {};

TEST_P(EveryConfiguration, Q41EqualsReferenceAndEvicts) {
  ASSERT_NE(cache_, nullptr) << "MQX_SSB_GPU_TEST_DATA is not set";
  Config config = aloneWithLimit(kOperatorLimit);
  GetParam().apply(config);
  SimDeviceReport report = runAndCheck(QueryId::Q4_1, Variant::OperatorAtATime, config);
  EXPECT_GT(report.statistics.evictions, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    SimDevice, EveryConfiguration,
    ::testing::Values(ConfigCase{"CDR", [](Config& c) { c.replacement = ReplacementKind::Cdr; }},
                      ConfigCase{"LRU", [](Config& c) { c.replacement = ReplacementKind::Lru; }},
                      ConfigCase{"MRU", [](Config& c) { c.replacement = ReplacementKind::Mru; }},
                      ConfigCase{"LFU", [](Config& c) { c.replacement = ReplacementKind::Lfu; }},
                      ConfigCase{"RANDOM", [](Config& c) { c.replacement = ReplacementKind::Random; }},
                      ConfigCase{"PageEviction", [](Config& c) { c.evictionGranularity = EvictionGranularity::Page; }},
                      ConfigCase{"NoLazy", [](Config& c) { c.lazyTransfer = false; }},
                      ConfigCase{"NoCow", [](Config& c) { c.copyOnWrite = false; }},
                      ConfigCase{"NoRef", [](Config& c) { c.referenceDetection = ReferenceDetection::All; }},
                      ConfigCase{"ScanReferences", [](Config& c) { c.referenceDetection = ReferenceDetection::Scan; }},
                      ConfigCase{"NoAccess", [](Config& c) { c.accessAdvice = false; }},
                      ConfigCase{"NoPage", [](Config& c) { c.pageCoherence = false; }}),
    [](const auto& info) { return info.param.name; });

} // namespace
} // namespace mqx::ssb::gpu
