// CudaBackend: the DeviceBackend on a real GPU, in the context that was
// current when it was created (the application's; cudart's primary context).
//
// - Ranges and pages: DeviceMappings (cuMemAddressReserve, cuMemCreate +
//   cuMemMap + cuMemSetAccess, cuMemUnmap + cuMemRelease).
// - Transfers: two dedicated non-blocking streams, one per direction, so
//   that mqx's copies never wait behind the application's default stream;
//   pinned memory goes straight to the DMA engine, pageable memory through a
//   StagingRing.
// - Completion: FenceTable (cuStreamWriteValue64 into pinned host words).
// - Launches: the application's own call replayed (NativeLaunch).
//
// Thread-safe: each part has its own lock; the backend is called from
// application threads and from mqx's own.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "device/cuda/device_mappings.hpp"
#include "device/cuda/driver_api.hpp"
#include "device/cuda/driver_handles.hpp"
#include "device/cuda/fence_table.hpp"
#include "device/cuda/host_blocks.hpp"
#include "device/cuda/param_layout_cache.hpp"
#include "device/cuda/staging_ring.hpp"
#include "device/device_backend.hpp"

namespace mqx::device::cuda {

struct CudaBackendOptions {
  StagingOptions staging;
  // FenceTable coalescing window; 0 writes every fence (the default).
  unsigned fenceCoalesceMicroseconds = 0;
};

class CudaBackend final : public DeviceBackend {
public:
  // Uses the calling thread's current context. InvalidContext when there is
  // none; NotSupported when the device lacks virtual memory management or
  // 64-bit stream memory operations. `api` must outlive the backend.
  static Status create(const DriverApi& api, const CudaBackendOptions& options, std::unique_ptr<CudaBackend>* out);
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  std::size_t granularity() const override { return granularity_; }
  std::size_t totalMemory() const override { return totalMemory_; }
  std::size_t freeMemory() const override;

  Status reserve(std::size_t bytes, DevicePtr* base) override;
  Status release(DevicePtr base, std::size_t bytes) override;
  Status map(DevicePtr address, std::size_t bytes) override;
  Status unmap(DevicePtr address, std::size_t bytes) override;
  Status shareMapping(DevicePtr address, std::size_t bytes, int* descriptor) override;
  Status mapShared(DevicePtr address, std::size_t bytes, int descriptor) override;

  Status createHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) override;
  void destroyHostBlocks(const std::vector<HostBlock>& blocks) override;
  Status createLendableHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) override;
  Status exportHostBlock(const HostBlock& block, LentHostBlock* lent) override;
  Status importHostBlocks(std::span<const LentHostBlock> lent, std::vector<HostBlock>* blocks) override;
  Status mapHostBlocks(std::span<const HostMapping> mappings) override;

  Status allocateHost(std::size_t bytes, void** out) override;
  void freeHost(void* pointer, std::size_t bytes) override;

  StreamHandle transferStream(TransferDirection direction) override;

  Status copyToDevice(DevicePtr destination, const void* source, std::size_t bytes, StreamHandle stream,
                      bool hostIsPinned) override;
  Status copyToHost(void* destination, DevicePtr source, std::size_t bytes, StreamHandle stream,
                    bool hostIsPinned) override;
  Status copyOnDevice(DevicePtr destination, DevicePtr source, std::size_t bytes, StreamHandle stream) override;
  Status fill(DevicePtr destination, std::uint32_t pattern, unsigned elementSize, std::size_t count,
              StreamHandle stream) override;

  Status launch(const KernelLaunch& launch) override;
  Status paramLayout(FunctionHandle function, std::vector<ParamInfo>* layout) override;

  Status order(StreamHandle signaller, StreamHandle waiter) override;
  Status enqueueFence(StreamHandle stream, Fence* fence) override;
  bool fenceReached(const Fence& fence) override;
  Status waitFence(const Fence& fence) override;
  Status synchronize(StreamHandle stream) override;
  void streamDestroyed(StreamHandle stream) override;

  CUcontext context() const { return context_; }
  CUdevice device() const { return device_; }
  const std::string& deviceName() const { return deviceName_; }
  const DriverApi& api() const { return api_; }
  // Bytes of device memory mapped right now (for statistics and tests).
  std::size_t mappedBytes() const { return mappings_.mappedBytes(); }

private:
  CudaBackend(const DriverApi& api, CUcontext context, CUdevice device, const CudaBackendOptions& options);
  Status initialise();
  // Whether `pointer` lies in memory the driver pinned (cuMemHostAlloc).
  bool isPinned(const void* pointer) const;
  Status check(const char* call, CUresult result) const;

  const DriverApi& api_;
  CUcontext context_;
  CUdevice device_;
  std::string deviceName_;
  std::size_t granularity_ = 0;
  std::size_t totalMemory_ = 0;
  DeviceMappings mappings_;
  HostBlocks hostBlocks_;
  bool hostBlocksSupported_ = false;
  FenceTable fences_;
  StagingRing staging_;
  ParamLayoutCache layouts_;
  Stream toDevice_;
  Stream toHost_;
  std::mutex orderMutex_;
  Event orderEvent_;
};

} // namespace mqx::device::cuda
