// The device backend interface: what the core needs from a device, shaped by
// the CUDA driver's real behaviour. Every operation that touches device
// memory is asynchronous on a stream, virtual ranges are reserved without
// physical memory and backed at the device's granularity, and every failure
// is a Status code (the CUresult value on the GPU).
//
// Two implementations: device/cuda (the product) and device/sim (host memory
// standing in for the device, for machines without a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/status.hpp"
#include "common/types.hpp"

namespace mqx::device {

// One kernel parameter as the launch passes it: byte offset and size in the
// parameter buffer (cuFuncGetParamInfo on the GPU).
struct ParamInfo {
  std::size_t offset = 0;
  std::size_t size = 0;
};

// A kernel launch as the application asked for it. On the GPU, `native`
// points at the interposer's record of the original call (cuLaunchKernel or
// cuLaunchKernelEx arguments) and the backend replays it unchanged.
struct KernelLaunch {
  FunctionHandle function = 0;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  StreamHandle stream = 0;
  void** params = nullptr; // kernelParams: one pointer per parameter
  const void* native = nullptr;
};

// A point in a stream's work: reached once everything enqueued on the stream
// before it has completed. On the GPU a stream memory operation writes the
// value into pinned host memory (no host callback in the GPU's queue).
struct Fence {
  std::uint32_t slot = 0;
  std::uint64_t value = 0;
};

enum class TransferDirection { ToDevice, ToHost };

// Host-located physical memory that can be mapped under a device virtual
// range (docs/architecture.md, "every page always mapped"): a page that is
// not resident maps one of these, which holds its bytes, so that a kernel
// that reaches it unforeseen reads and writes host memory instead of faulting.
// The CPU reaches the same memory at `host`; it is pinned, so DMA to and from
// it runs at the full rate.
struct HostBlock {
  std::uint64_t handle = 0; // the backend's: a physical allocation (CUDA) or a shared-memory file (sim)
  std::size_t offset = 0;   // into the handle's memory
  std::byte* host = nullptr;
  std::size_t bytes = 0;
};

// A host block as it travels to another process (a node's pool of pinned
// host memory lends blocks to its clients: ipc/host_block_lending.hpp): a
// descriptor of the memory (a file descriptor) and the block's place in it.
struct LentHostBlock {
  int descriptor = -1;
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

// One host block to map under a device address (DeviceBackend::mapHostBlocks).
struct HostMapping {
  DevicePtr address = 0;
  HostBlock block;
};

// What a node's pool of lent host blocks needs (ipc::HostBlockLender): to
// make blocks another process can import, describe them, and destroy them.
// Apart from DeviceBackend because the pool needs no device: on a GPU node
// mqxd makes its blocks without a CUDA context (ContextlessHostBlocks),
// which would hold ~524 MiB of the device
// (bench/results/host-block-contextless-H100-c7eaabd.txt).
class HostBlockMaker {
public:
  virtual ~HostBlockMaker() = default;
  // Physical allocation granularity (2 MiB on an H100).
  virtual std::size_t granularity() const = 0;
  // Host blocks lent between processes, because creating pinned memory is
  // the slow part (cuMemCreate pins at 3.7-4.7 GB/s on the H100) and
  // importing it is not (33-36 GB/s: bench/results/host-pool-import-*.txt).
  // createLendableHostBlocks makes blocks that exportHostBlock can describe
  // (a new descriptor the caller owns), which the CPU reaches at `host`.
  // NotSupported where memory cannot be shared between processes.
  virtual Status createLendableHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) = 0;
  virtual Status exportHostBlock(const HostBlock& block, LentHostBlock* lent) = 0;
  virtual void destroyHostBlocks(const std::vector<HostBlock>& blocks) = 0;
};

class DeviceBackend : public HostBlockMaker {
public:
  virtual std::string_view name() const = 0;
  // Physical device memory this process may map (capacity, not free memory).
  virtual std::size_t totalMemory() const = 0;
  // Physical device memory free right now (cuMemGetInfo's free).
  virtual std::size_t freeMemory() const = 0;

  // Stable virtual ranges. `bytes` is a multiple of granularity().
  virtual Status reserve(std::size_t bytes, DevicePtr* base) = 0;
  virtual Status release(DevicePtr base, std::size_t bytes) = 0;
  // Back [address, address + bytes) with physical memory, readable and
  // writable by the device. Fails with OutOfMemory when the device is full.
  virtual Status map(DevicePtr address, std::size_t bytes) = 0;
  // Drop the physical memory under a mapped range. The caller guarantees that
  // no enqueued work still touches it.
  virtual Status unmap(DevicePtr address, std::size_t bytes) = 0;

  // Device memory shared with other processes (cuIpcGetMemHandle; docs/
  // interposer.md, "Handles to other processes"). shareMapping makes the
  // physical memory under [address, address + bytes) shareable, keeping its
  // bytes, and returns a descriptor of it that the caller owns. The range is
  // tiled by mappings that map() made: one, or several adjacent ones, which
  // then move onto one shareable allocation (each at its offset), so that
  // one descriptor holds the whole range. The caller guarantees that no
  // enqueued work touches the range: the memory under it may be replaced by
  // a shareable copy. NotSupported where the device cannot share memory
  // between processes.
  virtual Status shareMapping(DevicePtr address, std::size_t bytes, int* descriptor) = 0;
  // Maps memory that a process shared (shareMapping's descriptor, sent over
  // a socket) at [address, address + bytes), inside a range reserve() gave;
  // unmap() takes it away. The memory is its exporter's: it counts against
  // nothing here and lives on while either process maps it.
  virtual Status mapShared(DevicePtr address, std::size_t bytes, int descriptor) = 0;

  // Host blocks (HostBlock): `count` blocks of `bytes` each, created at once
  // (creating pinned memory is slow: about 50 ms per 256 MiB on an H100, so
  // the swap buffer grows in chunks). NotSupported where the device cannot
  // map host memory under its ranges; the core then leaves evicted pages
  // unmapped (docs/architecture.md says what that costs).
  // destroyHostBlocks (HostBlockMaker) destroys them.
  virtual Status createHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) = 0;
  // Lendable blocks are HostBlockMaker's. importHostBlocks makes blocks of
  // another process's memory (the descriptors stay the caller's), usable as
  // any block until destroyHostBlocks. NotSupported where memory cannot be
  // shared between processes.
  virtual Status importHostBlocks(std::span<const LentHostBlock> lent, std::vector<HostBlock>* blocks) = 0;
  // Maps each block under [address, address + block.bytes), readable and
  // writable by the device; unmap() takes each away again. The blocks stay
  // the caller's. All or none: on failure nothing of the batch is mapped.
  // One call for many pages, because setting access once over a run of
  // adjacent pages is cheaper than once per page, and eviction maps its
  // pages together after the write-backs (bench/gpu/vmm_costs.cpp: mapping
  // while copies run is slow).
  virtual Status mapHostBlocks(std::span<const HostMapping> mappings) = 0;
  Status mapHost(DevicePtr address, const HostBlock& block) {
    const HostMapping mapping{address, block};
    return mapHostBlocks({&mapping, 1});
  }

  // Host memory for the swap buffer: pinned where the device can, so that DMA
  // runs at full speed.
  virtual Status allocateHost(std::size_t bytes, void** out) = 0;
  virtual void freeHost(void* pointer, std::size_t bytes) = 0;

  // The backend's own stream for transfers in one direction (paper §6: a
  // dedicated DMA stream per direction avoids false synchronisation).
  virtual StreamHandle transferStream(TransferDirection direction) = 0;

  // Asynchronous copies and fills, in order on `stream`. The host side of a
  // copy must stay valid until the stream passes the copy; `hostIsPinned`
  // says whether it is device-accessible pinned memory.
  virtual Status copyToDevice(DevicePtr destination, const void* source, std::size_t bytes, StreamHandle stream,
                              bool hostIsPinned) = 0;
  virtual Status copyToHost(void* destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                            bool hostIsPinned) = 0;
  virtual Status copyOnDevice(DevicePtr destination, DevicePtr source, std::size_t bytes, StreamHandle stream) = 0;
  // Writes `count` elements of `elementSize` (1, 2 or 4) bytes of `pattern`.
  virtual Status fill(DevicePtr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
                      StreamHandle stream) = 0;

  virtual Status launch(const KernelLaunch& launch) = 0;
  // The parameter layout of a kernel, for reference discovery by scanning
  // parameter bytes. NotSupported when the backend cannot tell.
  virtual Status paramLayout(FunctionHandle function, std::vector<ParamInfo>* layout) = 0;

  // Work enqueued on `waiter` after this call starts only after the work
  // enqueued on `signaller` before this call has completed.
  virtual Status order(StreamHandle signaller, StreamHandle waiter) = 0;
  virtual Status enqueueFence(StreamHandle stream, Fence* fence) = 0;
  virtual bool fenceReached(const Fence& fence) = 0;
  virtual Status waitFence(const Fence& fence) = 0;
  virtual Status synchronize(StreamHandle stream) = 0;
  // The application is about to destroy `stream` (its enqueued work still
  // runs to the end): the backend stops using the handle.
  virtual void streamDestroyed(StreamHandle stream) {}
};

} // namespace mqx::device
