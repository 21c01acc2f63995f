// StagingRing: copies between pageable host memory and the device at pinned
// speed. The driver's own pageable path is synchronous and runs at about a
// sixth of the pinned rate on an H100; here the data passes through a ring of
// pinned buffers: several cores copy chunk k+1 into one buffer while the DMA
// engine moves chunk k out of another.
//
// toDevice returns once the source has been read (the caller may reuse it at
// once); the DMA may still be running on the stream. toHost returns once the
// destination holds the data (host memory cannot be filled later without a
// host thread, and the device-to-host direction has to wait anyway).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "common/status.hpp"
#include "device/cuda/driver_api.hpp"
#include "device/cuda/driver_handles.hpp"
#include "device/cuda/parallel_copier.hpp"

namespace mqx::device::cuda {

struct StagingOptions {
  std::size_t chunkBytes = 8 << 20;
  unsigned buffers = 4;
  unsigned copyThreads = 0; // 0: half the cores, at most 8
};

class StagingRing {
public:
  StagingRing(const DriverApi& api, const StagingOptions& options);
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // Allocates the pinned buffers (on first use, so that a process that never
  // copies pageable memory never pins any).
  Status toDevice(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream);
  Status toHost(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream);

  unsigned copyThreads() const { return copier_.workers() + 1; }

private:
  struct Buffer {
    PinnedHostMemory memory;
    Event done;           // recorded after the buffer's last DMA
    bool pending = false; // `done` was recorded and not yet waited for
  };

  Status ensureBuffers();
  // Waits until the buffer's last DMA has finished.
  Status drain(Buffer& buffer);

  const DriverApi& api_;
  StagingOptions options_;
  ParallelCopier copier_;
  std::mutex mutex_;
  std::vector<Buffer> buffers_;
  std::size_t next_ = 0;
};

} // namespace mqx::device::cuda
