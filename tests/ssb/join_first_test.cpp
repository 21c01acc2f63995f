// The join-first variant (executor.hpp) on the simulated device: every
// query's result through the join index equals the CPU reference, under a
// device memory limit below the variant's footprint (so mqx must evict and
// reload its large intermediates), under CDR and LRU alike; and the variant
// really holds intermediates of lineorder's length at once.
#include "ssb/common/column_cache.hpp"
#include "ssb/gpu/executor.hpp"
#include "ssb/gpu/query_plan.hpp"
#include "ssb/gpu/result_decoder.hpp"
#include "ssb/gpu/sim_query_device.hpp"
#include "ssb/reference/reference_queries.hpp"
#include "test_datasets.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <tuple>

namespace mqx::ssb::gpu {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
// Above the largest join-first kernel at SF 0.05 (a probe: foreign keys,
// selection, table, three outputs, counter; each a 2 MiB region), below
// every query's footprint.
constexpr std::size_t kLimit = 16 * kMiB;

Config aloneWithLimit(ReplacementKind policy) {
  Config config;
  config.deviceMemoryLimit = kLimit;
  config.replacement = policy;
  config.daemonInstance = "ssb-join-first-test-" + std::to_string(getpid());
  return config;
}

class JoinFirst : public ::testing::TestWithParam<std::tuple<QueryId, ReplacementKind>> {};

TEST_P(JoinFirst, EqualsReferenceUnderLimit) {
  auto [query, policy] = GetParam();
  const SsbData& data = test::generatedDataset(0.05, 1).data;
  ColumnCache cache(data);
  QueryPlan plan = planQuery(query, cache);
  SimQueryDevice device(aloneWithLimit(policy), "join_first_test");
  QueryRun run = runPlan(plan, cache, device, Variant::JoinFirst);
  QueryResult expected = runReferenceQuery(query, cache);
  EXPECT_EQ(describeDifference(expected, decodeResult(plan, run.aggregate, cache)), "");
  // The join index: lineorder's rows and one position per join, each of
  // lineorder's length, at once.
  const std::size_t column = static_cast<std::size_t>(cache.rows(TableId::Lineorder)) * 4;
  EXPECT_GE(run.peakDeviceBytes, (plan.joins.size() + 1) * column);
  // Every allocation is a region of at least 2 MiB: the join index alone
  // exceeds the limit, so mqx must evict.
  const Statistics& stats = device.report().statistics;
  EXPECT_GT(stats.evictions, 0u);
  // With two joins or more the join index outlives a probe that needs the
  // whole limit: intermediates written on the device were written back.
  if (plan.joins.size() >= 2) {
    EXPECT_GT(stats.bytesWrittenBack, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SimDevice, JoinFirst,
    ::testing::Combine(::testing::Values(QueryId::Q1_1, QueryId::Q1_2, QueryId::Q1_3, QueryId::Q2_1, QueryId::Q2_2,
                                         QueryId::Q2_3, QueryId::Q3_1, QueryId::Q3_2, QueryId::Q3_3, QueryId::Q3_4,
                                         QueryId::Q4_1, QueryId::Q4_2, QueryId::Q4_3),
                       ::testing::Values(ReplacementKind::Cdr, ReplacementKind::Lru)),
    [](const auto& info) {
      std::string name(queryName(std::get<0>(info.param)));
      for (char& c : name)
        if (c == '.') c = '_';
      return name + (std::get<1>(info.param) == ReplacementKind::Cdr ? "_cdr" : "_lru");
    });

} // namespace
} // namespace mqx::ssb::gpu
