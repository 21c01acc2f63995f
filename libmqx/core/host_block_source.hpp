// HostBlockSource: where the swap buffer takes host blocks from before it
// creates its own. Creating pinned host memory is what makes evicting beyond
// the device slow (cuMemCreate pins at 3.7-4.7 GB/s on the H100), while
// importing blocks another process created ahead of need costs a tenth of it
// (bench/results/host-pool-import-*.txt): mqxd keeps a pool and lends blocks
// (ipc/host_block_lending.hpp; docs/architecture.md, decision 4, and
// docs/daemon.md, "Lent host blocks").
// The core sees only this interface (the layers: core does not know ipc).
#pragma once

#include <cstddef>
#include <vector>

#include "device/device_backend.hpp"

namespace mqx {

class HostBlockSource {
public:
  virtual ~HostBlockSource() = default;
  // Up to `count` blocks of `bytes` each, ready to use as created ones are
  // (mapped under pages, copied to and from); fewer or none when the source
  // has fewer, or none of that size. Never waits long: the caller creates
  // what it does not get.
  [[nodiscard]] virtual std::vector<device::HostBlock> take(std::size_t bytes, std::size_t count) = 0;
  // Gives back blocks take() gave (no longer mapped anywhere).
  virtual void giveBack(const std::vector<device::HostBlock>& blocks) = 0;
};

} // namespace mqx
