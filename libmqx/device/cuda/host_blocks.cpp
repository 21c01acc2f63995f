#include "device/cuda/host_blocks.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "common/log.hpp"
#include "device/cuda/context_guard.hpp"
#include "device/cuda/cu_status.hpp"

namespace mqx::device::cuda {

HostBlocks::HostBlocks(const DriverApi& api, CUdevice device) : api_(api), device_(device) {}

HostBlocks::~HostBlocks() {
  std::lock_guard lock(mutex_);
  for (auto& [view, chunk] : chunks_)
    releaseChunk(chunk);
}

CUmemAllocationProp HostBlocks::properties() const {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = hostLocation_;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

CUmemAccessDesc HostBlocks::deviceAccess() const {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

Status HostBlocks::probe() {
  // The device's own NUMA node where the driver reports one (host memory
  // near the GPU), else node 0, else host memory anywhere.
  int numaNode = -1;
  if (api_.cuDeviceGetAttribute(&numaNode, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, device_) != CUDA_SUCCESS || numaNode < 0)
    numaNode = 0;
  const CUmemLocation candidates[] = {{CU_MEM_LOCATION_TYPE_HOST_NUMA, numaNode}, {CU_MEM_LOCATION_TYPE_HOST, 0}};
  std::size_t granularity = 0;
  for (const CUmemLocation& location : candidates) {
    hostLocation_ = location;
    std::vector<HostBlock> trial;
    CUmemAllocationProp prop = properties();
    if (api_.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS)
      continue;
    if (ok(create(granularity, 1, &trial))) {
      destroy(trial);
      log(LogLevel::Info, "host blocks: {} (node {})",
          location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? "host NUMA memory" : "host memory", location.id);
      return Status::Success;
    }
  }
  log(LogLevel::Warn, "host-located memory cannot be mapped under device ranges here: evicted pages stay unmapped");
  return Status::NotSupported;
}

Status HostBlocks::create(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) {
  if (bytes == 0 || count == 0 || blocks == nullptr) return Status::InvalidValue;
  Chunk chunk;
  chunk.bytes = bytes * count;
  chunk.blockBytes = bytes;
  CUresult result = api_.cuMemAddressReserve(&chunk.view, chunk.bytes, 0, 0, 0);
  if (result != CUDA_SUCCESS) return toStatus(result);
  CUmemAllocationProp prop = properties();
  // The device and the CPU both reach the view.
  CUmemAccessDesc access[2] = {deviceAccess(), {}};
  access[1].location = hostLocation_;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<PhysicalMemory> physical(count);
  result = createAll(bytes, prop, physical);
  for (std::size_t i = 0; i < count && result == CUDA_SUCCESS; ++i) {
    const CUdeviceptr at = chunk.view + i * bytes;
    result = api_.cuMemMap(at, bytes, 0, physical[i].get(), 0);
    if (result == CUDA_SUCCESS) {
      chunk.blocks.push_back(std::move(physical[i]));
      result = api_.cuMemSetAccess(at, bytes, access, 2);
    }
  }
  if (result != CUDA_SUCCESS) {
    if (result != CUDA_ERROR_OUT_OF_MEMORY) log(LogLevel::Debug, "{}", api_.describe("host block", result));
    releaseChunk(chunk);
    return toStatus(result);
  }
  blocks->clear();
  for (std::size_t i = 0; i < count; ++i)
    blocks->push_back(HostBlock{chunk.blocks[i].get(), 0, reinterpret_cast<std::byte*>(chunk.view + i * bytes), bytes});
  chunk.blocksLeft = count;
  std::lock_guard lock(mutex_);
  chunks_.emplace(chunk.view, std::move(chunk));
  return Status::Success;
}

CUresult HostBlocks::createAll(std::size_t bytes, const CUmemAllocationProp& prop, std::vector<PhysicalMemory>& out) {
  // Creating a host block pins its memory (the driver faults in and locks
  // every host page): 13-23 ms per 64 MiB on the H100 host, which the swap
  // buffer pays as evictions first need room. From 8 threads at once the
  // driver reaches 3.8-3.9 GB/s from 2, 4 or 8 threads against 2.7 from one
  // (bench/gpu/host_block_growth.cpp, bench/results/host-block-growth-H100-1c217b3.txt):
  // a chunk's blocks are created by several threads.
  const std::size_t threads =
      std::min<std::size_t>({out.size(), kCreateThreads, std::max(1u, std::thread::hardware_concurrency() / 2)});
  std::atomic<CUresult> failure{CUDA_SUCCESS};
  CUcontext context = nullptr;
  api_.cuCtxGetCurrent(&context);
  const auto createEvery = [&](std::size_t first) {
    std::optional<ContextGuard> guard;
    if (context != nullptr) guard.emplace(api_, context);
    for (std::size_t i = first; i < out.size() && failure.load() == CUDA_SUCCESS; i += threads)
      if (const CUresult result = createPhysical(api_, bytes, prop, &out[i]); result != CUDA_SUCCESS)
        failure.store(result);
  };
  if (threads <= 1) {
    createEvery(0);
    return failure.load();
  }
  std::vector<std::jthread> workers;
  for (std::size_t t = 1; t < threads; ++t)
    workers.emplace_back(createEvery, t);
  createEvery(0);
  workers.clear(); // joins
  return failure.load();
}

void HostBlocks::releaseChunk(Chunk& chunk) {
  // Blocks map at the view's start in order; a failed create may have left
  // its last block unmapped, which cuMemUnmap then refuses harmlessly.
  for (std::size_t i = 0; i < chunk.blocks.size(); ++i)
    api_.cuMemUnmap(chunk.view + i * chunk.blockBytes, chunk.blockBytes);
  chunk.blocks.clear(); // releases the physical memory
  if (chunk.view != 0) api_.cuMemAddressFree(chunk.view, chunk.bytes);
  chunk.view = 0;
}

void HostBlocks::destroy(const std::vector<HostBlock>& blocks) {
  std::lock_guard lock(mutex_);
  for (const HostBlock& block : blocks) {
    const auto at = reinterpret_cast<CUdeviceptr>(block.host);
    auto it = chunks_.upper_bound(at);
    if (it == chunks_.begin()) continue;
    --it;
    if (at >= it->first + it->second.bytes) continue;
    if (--it->second.blocksLeft == 0) {
      releaseChunk(it->second);
      chunks_.erase(it);
    }
  }
}

bool HostBlocks::contains(const void* pointer) const {
  const auto at = reinterpret_cast<CUdeviceptr>(pointer);
  std::lock_guard lock(mutex_);
  auto it = chunks_.upper_bound(at);
  if (it == chunks_.begin()) return false;
  --it;
  return at < it->first + it->second.bytes;
}

} // namespace mqx::device::cuda
