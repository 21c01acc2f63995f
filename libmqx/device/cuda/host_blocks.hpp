// HostBlocks: host-located physical memory (cuMemCreate with a host
// location) for pages that are not resident (docs/architecture.md, "every
// page always mapped"). Each block is one physical allocation, since
// cuMemMap maps an allocation from its start only; a chunk of blocks shares
// one reserved view range, mapped with access for the device and the CPU, so
// that the CPU reads and writes the blocks through ordinary pointers and DMA
// reaches them at the pinned rate. DeviceMappings maps a block a second time
// under a page of the application's range.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.hpp"
#include "device/cuda/driver_api.hpp"
#include "device/cuda/driver_handles.hpp"
#include "device/device_backend.hpp"

namespace mqx::device::cuda {

class HostBlocks {
public:
  // Who the blocks are opened to. HostOnly: the CPU alone, as mqxd's pool
  // makes them with no CUDA context (ContextlessHostBlocks); a borrower
  // opens its import to its device itself.
  enum class Reach { DeviceAndHost, HostOnly };
  HostBlocks(const DriverApi& api, CUdevice device, Reach reach = Reach::DeviceAndHost);
  ~HostBlocks();
  HostBlocks(const HostBlocks&) = delete;
  HostBlocks& operator=(const HostBlocks&) = delete;

  // Finds the host location the driver accepts (a host NUMA node, else any
  // host memory) and whether the CPU may be given access. NotSupported when
  // neither works: the core then leaves evicted pages unmapped.
  Status probe();
  // The granularity of lendable blocks at the location probe() found; 0
  // when that is no host NUMA node (only those are exportable) or the driver
  // does not say.
  std::size_t lendableGranularity() const;
  // `lendable`: created exportable as POSIX file descriptors (exportBlock).
  Status create(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks, bool lendable = false);
  // DeviceBackend::exportHostBlock and importHostBlocks: another process's
  // blocks are imported, mapped side by side in one view and opened to the
  // device and the CPU once for the whole view, as created ones are.
  Status exportBlock(const HostBlock& block, LentHostBlock* lent) const;
  Status importBlocks(std::span<const LentHostBlock> lent, std::vector<HostBlock>* blocks);
  void destroy(const std::vector<HostBlock>& blocks);
  // Whether `pointer` lies in a block (copies to and from blocks go through
  // unified addressing, not the pinned-host-pointer calls).
  bool contains(const void* pointer) const;
  // The access descriptors for a second mapping of a block under a page:
  // the device reads and writes it.
  CUmemAccessDesc deviceAccess() const;

private:
  struct Chunk {
    CUdeviceptr view = 0;
    std::size_t bytes = 0;      // the view's
    std::size_t blockBytes = 0; // each block's
    std::vector<PhysicalMemory> blocks;
    std::size_t blocksMapped = 0; // the first ones, in order
    std::size_t blocksLeft = 0;
  };
  CUmemAllocationProp properties(bool lendable = false) const;
  // Maps the chunk's blocks in its view and opens them to the device and
  // the CPU; its blocks' handles are in chunk.blocks.
  CUresult mapChunk(Chunk& chunk);
  void addChunk(Chunk chunk, std::vector<HostBlock>* blocks);
  void releaseChunk(Chunk& chunk);

  const DriverApi& api_;
  CUdevice device_;
  Reach reach_;
  CUmemLocation hostLocation_{};
  mutable std::mutex mutex_;
  std::map<CUdeviceptr, Chunk> chunks_; // by view address
};

} // namespace mqx::device::cuda
