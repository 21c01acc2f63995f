// Statistics::toJson: one line of JSON holding every counter as an exact
// integer, under the keys that mqx_statistics_json's readers look up.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>

#include "core/statistics.hpp"

namespace mqx {
namespace {

TEST(StatisticsJson, EveryCounterParsesBackExactly) {
  Statistics statistics;
  std::uint64_t value = std::numeric_limits<std::uint64_t>::max() - 100; // beyond a double's exact integers
  for (std::uint64_t* counter : {&statistics.bytesToDevice,
                                 &statistics.bytesToHost,
                                 &statistics.bytesOnDevice,
                                 &statistics.bytesFilledOnDevice,
                                 &statistics.bytesRequestedToDevice,
                                 &statistics.bytesAvoidedLazy,
                                 &statistics.bytesWrittenBack,
                                 &statistics.bytesDroppedClean,
                                 &statistics.evictions,
                                 &statistics.pagesEvicted,
                                 &statistics.bytesCopiedOnHost,
                                 &statistics.cowFaults,
                                 &statistics.cowBytesSaved,
                                 &statistics.launches,
                                 &statistics.residencyWaitNanoseconds,
                                 &statistics.fenceWaits,
                                 &statistics.peerEvictions,
                                 &statistics.launchYields,
                                 &statistics.bytesEvictedWhileYielding,
                                 &statistics.bytesWrittenAhead,
                                 &statistics.bytesWrittenAheadStale,
                                 &statistics.evictionNanoseconds,
                                 &statistics.fenceWaitsToRemap,
                                 &statistics.fenceWaitNanoseconds,
                                 &statistics.evictionsBesideLoads,
                                 &statistics.stagedWriteBacks,
                                 &statistics.swapBytesHeld,
                                 &statistics.swapBytesBorrowed})
    *counter = value++;
  const std::string text = statistics.toJson();
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text);
  ASSERT_EQ(parsed.size(), 28u) << text;
  const std::pair<const char*, std::uint64_t> expected[] = {
      {"bytes_to_device", statistics.bytesToDevice},
      {"bytes_to_host", statistics.bytesToHost},
      {"bytes_on_device", statistics.bytesOnDevice},
      {"bytes_filled_on_device", statistics.bytesFilledOnDevice},
      {"bytes_requested_to_device", statistics.bytesRequestedToDevice},
      {"bytes_avoided_lazy", statistics.bytesAvoidedLazy},
      {"bytes_written_back", statistics.bytesWrittenBack},
      {"bytes_dropped_clean", statistics.bytesDroppedClean},
      {"bytes_copied_on_host", statistics.bytesCopiedOnHost},
      {"evictions", statistics.evictions},
      {"pages_evicted", statistics.pagesEvicted},
      {"cow_faults", statistics.cowFaults},
      {"cow_bytes_saved", statistics.cowBytesSaved},
      {"launches", statistics.launches},
      {"residency_wait_ns", statistics.residencyWaitNanoseconds},
      {"fence_waits", statistics.fenceWaits},
      {"peer_evictions", statistics.peerEvictions},
      {"launch_yields", statistics.launchYields},
      {"bytes_evicted_while_yielding", statistics.bytesEvictedWhileYielding},
      {"bytes_written_ahead", statistics.bytesWrittenAhead},
      {"bytes_written_ahead_stale", statistics.bytesWrittenAheadStale},
      {"eviction_ns", statistics.evictionNanoseconds},
      {"fence_waits_to_remap", statistics.fenceWaitsToRemap},
      {"fence_wait_ns", statistics.fenceWaitNanoseconds},
      {"evictions_beside_loads", statistics.evictionsBesideLoads},
      {"staged_write_backs", statistics.stagedWriteBacks},
      {"swap_bytes_held", statistics.swapBytesHeld},
      {"swap_bytes_borrowed", statistics.swapBytesBorrowed},
  };
  auto field = parsed.items().begin();
  for (const auto& [key, counter] : expected) {
    EXPECT_EQ(field.key(), key); // in this order
    EXPECT_TRUE(field.value().is_number_unsigned()) << key;
    EXPECT_EQ(field.value().get<std::uint64_t>(), counter) << key;
    ++field;
  }
}

} // namespace
} // namespace mqx
