// DeviceWork and DeviceWorkRunner: the device side of one API call (a copy,
// a memset, a launch). The call lists the pages it needs and the operations
// to enqueue; the runner makes the pages resident (ResidencyManager),
// enqueues the operations, records the pages they wrote (PageStore, the
// images they let go of handed back to the PageMapper) and pins every page
// until the work completes (docs/architecture.md decision 7).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "common/status.hpp"
#include "core/page_mapper.hpp"
#include "core/peer_eviction.hpp"
#include "core/reference_finder.hpp"
#include "core/region_directory.hpp"
#include "core/residency_manager.hpp"
#include "device/device_backend.hpp"
#include "trace/trace_recorder.hpp"

namespace mqx {

// Device work of one API call: pages it needs resident, the operations to
// enqueue once they are, and the pages those operations write.
struct DeviceWork {
  std::vector<PageUse> uses;
  std::vector<std::function<Status()>> operations;
  std::vector<std::pair<Region*, std::uint32_t>> written;
  // The paper's NoRef variant: every region resident at launch counts as
  // read and written by the kernel (pinned, and dirty afterwards).
  bool residentRegionsReferenced = false;
  bool usesUnique = false; // no page named twice: no merge needed
  // A launch whose references are not known (docs/architecture.md): it may
  // reach every page of the process, so none is remapped until it completes.
  bool reachesEveryPage = false;
  bool empty() const { return operations.empty(); }
  // Empties it for reuse, keeping the vectors' capacity (the launch path).
  void clear();
  // The pages of [address, address + bytes) of `region` (null: unmanaged
  // memory, nothing to add) as used with `access`. A write of part of a
  // page reads it too: the rest of the page keeps its content.
  void addUses(Region* region, DevicePtr address, std::size_t bytes, Access access);
};

class DeviceWorkRunner {
public:
  DeviceWorkRunner(ResidencyManager& residency, PageMapper& mapper, PeerEviction& peers, RegionDirectory& directory,
                   device::DeviceBackend& backend, trace::TraceRecorder* trace)
      : residency_(residency), mapper_(mapper), peers_(peers), directory_(directory), backend_(backend), trace_(trace) {
  }

  // Makes the work's pages resident, enqueues its operations on `stream`,
  // records what they wrote and pins the pages until the work completes;
  // `wait`: returns once it has.
  Status run(DeviceWork& work, StreamHandle stream, bool wait);
  // A launch that may reach every page: resident pages that are not valid
  // on the device are loaded, those with a host image become its only copy
  // (the launch may write them), and pending pages on host blocks get their
  // bytes. Skipped when nothing changed since the last such launch.
  Status prepareEveryPage(const std::vector<RegionReference>& references, DeviceWork& work);

private:
  Status recordWritten(const DeviceWork& work);
  Status markResidentReferenced(const DeviceWork& work, std::vector<PageKey>& keys);

  ResidencyManager& residency_;
  PageMapper& mapper_;
  PeerEviction& peers_;
  RegionDirectory& directory_;
  device::DeviceBackend& backend_;
  trace::TraceRecorder* trace_; // null: tracing off
  // run()'s scratch, reused so that a launch allocates nothing once it has
  // grown (no operation re-enters run()).
  std::vector<PageKey> completionKeys_;
  // The pages as the last launch that may reach every page left them: the
  // mapper's version then, and whether no operation used pages since (an
  // operation may leave the pages it read clean on the device beside their
  // host image, which the next such launch must dirty).
  std::uint64_t preparedVersion_ = ~std::uint64_t{0};
  bool preparedSinceLastOperation_ = false;
};

} // namespace mqx
