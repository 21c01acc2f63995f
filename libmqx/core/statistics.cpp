#include "core/statistics.hpp"

#include <nlohmann/json.hpp>

namespace mqx {

std::string Statistics::toJson() const {
  // ordered_json: the keys stay in this order in the log line and in the
  // results files that embed them.
  const nlohmann::ordered_json counters = {
      {"bytes_to_device", bytesToDevice},
      {"bytes_to_host", bytesToHost},
      {"bytes_on_device", bytesOnDevice},
      {"bytes_filled_on_device", bytesFilledOnDevice},
      {"bytes_requested_to_device", bytesRequestedToDevice},
      {"bytes_avoided_lazy", bytesAvoidedLazy},
      {"bytes_written_back", bytesWrittenBack},
      {"bytes_dropped_clean", bytesDroppedClean},
      {"bytes_copied_on_host", bytesCopiedOnHost},
      {"evictions", evictions},
      {"pages_evicted", pagesEvicted},
      {"cow_faults", cowFaults},
      {"cow_bytes_saved", cowBytesSaved},
      {"launches", launches},
      {"residency_wait_ns", residencyWaitNanoseconds},
      {"fence_waits", fenceWaits},
      {"peer_evictions", peerEvictions},
      {"launch_yields", launchYields},
      {"bytes_evicted_while_yielding", bytesEvictedWhileYielding},
      {"bytes_written_ahead", bytesWrittenAhead},
      {"bytes_written_ahead_stale", bytesWrittenAheadStale},
      {"eviction_ns", evictionNanoseconds},
      {"fence_waits_to_remap", fenceWaitsToRemap},
      {"fence_wait_ns", fenceWaitNanoseconds},
      {"evictions_beside_loads", evictionsBesideLoads},
      {"staged_write_backs", stagedWriteBacks},
      {"swap_bytes_held", swapBytesHeld},
      {"swap_bytes_borrowed", swapBytesBorrowed},
  };
  return counters.dump();
}

} // namespace mqx
