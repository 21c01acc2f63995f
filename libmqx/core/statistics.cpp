#include "core/statistics.hpp"

#include <fmt/format.h>

namespace mqx {

std::string Statistics::toJson() const {
  return fmt::format("{{\"bytes_to_device\": {}, \"bytes_to_host\": {}, "
                     "\"bytes_on_device\": {}, \"bytes_filled_on_device\": {}, "
                     "\"bytes_requested_to_device\": {}, "
                     "\"bytes_avoided_lazy\": {}, \"bytes_written_back\": {}, "
                     "\"bytes_dropped_clean\": {}, \"bytes_copied_on_host\": {}, \"evictions\": {}, "
                     "\"pages_evicted\": {}, \"cow_faults\": {}, "
                     "\"cow_bytes_saved\": {}, \"launches\": {}, "
                     "\"residency_wait_ns\": {}, \"fence_waits\": {}, \"peer_evictions\": {}, "
                     "\"launch_yields\": {}, \"bytes_evicted_while_yielding\": {}}}",
                     bytesToDevice, bytesToHost, bytesOnDevice, bytesFilledOnDevice, bytesRequestedToDevice,
                     bytesAvoidedLazy, bytesWrittenBack, bytesDroppedClean, bytesCopiedOnHost, evictions, pagesEvicted,
                     cowFaults, cowBytesSaved, launches, residencyWaitNanoseconds, fenceWaits, peerEvictions,
                     launchYields, bytesEvictedWhileYielding);
}

} // namespace mqx
