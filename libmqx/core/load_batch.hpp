// LoadBatch: the transfers and fills that make pages' device copies valid,
// gathered for one operation (paper §4, docs/architecture.md decision 7).
// Loads of neighbouring pages from one contiguous source become one
// transfer: a lazy copy of a large buffer is then loaded at the rate of one
// large copy, not of many page-sized ones.
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.hpp"
#include "common/types.hpp"
#include "core/page_state.hpp"
#include "core/statistics.hpp"
#include "device/device_backend.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx {

// What the loads issued so far read, for the owner of the sources: an
// application buffer may change and a swap slot may be reused only once the
// loads that read it are done.
struct LoadSources {
  bool applicationBuffers = false; // copy-on-write sources
  bool swapSlots = false;
};

class LoadBatch {
public:
  // Adds the load of `bytes` at `address` from `image` (a page's host image).
  void add(DevicePtr address, const HostImage& image, std::size_t bytes);
  bool empty() const { return loads_.empty(); }
  std::size_t size() const { return loads_.size(); }

  // Enqueues every load on the backend's host-to-device stream, counting
  // them in `statistics` and marking in `sources` what they read (also when
  // one fails). `pinnedSwap`: swap slots are pinned memory.
  Status issue(device::DeviceBackend& backend, bool pinnedSwap, Statistics& statistics, trace::TraceRecorder* trace,
               LoadSources& sources) const;

private:
  // One transfer (or fill) that makes device memory valid.
  struct Load {
    DevicePtr address;
    HostImage image; // where the bytes come from (its first byte for address)
    std::size_t bytes;
  };
  void addMerged(const Load& load);
  static Status issueOne(const Load& load, device::DeviceBackend& backend, bool pinnedSwap, Statistics& statistics,
                         trace::TraceRecorder* trace, LoadSources& sources);

  std::vector<Load> loads_;
};

} // namespace mqx
