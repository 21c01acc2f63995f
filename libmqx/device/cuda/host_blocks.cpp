#include "device/cuda/host_blocks.hpp"

#include "common/log.hpp"
#include "device/cuda/cu_status.hpp"

namespace mqx::device::cuda {

HostBlocks::HostBlocks(const DriverApi& api, CUdevice device, Reach reach)
    : api_(api), device_(device), reach_(reach) {}

HostBlocks::~HostBlocks() {
  std::lock_guard lock(mutex_);
  for (auto& [view, chunk] : chunks_)
    releaseChunk(chunk);
}

CUmemAllocationProp HostBlocks::properties(bool lendable) const {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = hostLocation_;
  // Only HOST_NUMA memory is IPC-capable (cuda.h, cuMemCreate: HOST
  // allocations must request no handle type).
  prop.requestedHandleTypes = lendable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
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

std::size_t HostBlocks::lendableGranularity() const {
  if (hostLocation_.type != CU_MEM_LOCATION_TYPE_HOST_NUMA) return 0;
  std::size_t granularity = 0;
  const CUmemAllocationProp prop = properties(true);
  return api_.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS
             ? granularity
             : 0;
}

Status HostBlocks::create(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks, bool lendable) {
  if (bytes == 0 || count == 0 || blocks == nullptr) return Status::InvalidValue;
  if (lendable && hostLocation_.type != CU_MEM_LOCATION_TYPE_HOST_NUMA) return Status::NotSupported;
  Chunk chunk;
  chunk.bytes = bytes * count;
  chunk.blockBytes = bytes;
  const CUmemAllocationProp prop = properties(lendable);
  CUresult result = CUDA_SUCCESS;
  for (std::size_t i = 0; i < count && result == CUDA_SUCCESS; ++i) {
    PhysicalMemory block;
    result = createPhysical(api_, bytes, prop, &block);
    if (result == CUDA_SUCCESS) chunk.blocks.push_back(std::move(block));
  }
  if (result == CUDA_SUCCESS) result = mapChunk(chunk);
  if (result != CUDA_SUCCESS) {
    if (result != CUDA_ERROR_OUT_OF_MEMORY) log(LogLevel::Debug, "{}", api_.describe("host block", result));
    releaseChunk(chunk);
    return toStatus(result);
  }
  addChunk(std::move(chunk), blocks);
  return Status::Success;
}

CUresult HostBlocks::mapChunk(Chunk& chunk) {
  CUresult result = api_.cuMemAddressReserve(&chunk.view, chunk.bytes, 0, 0, 0);
  if (result != CUDA_SUCCESS) {
    chunk.view = 0;
    return result;
  }
  // The device and the CPU both reach the view. One cuMemSetAccess per
  // block, as the host blocks were mapped when the GPU suite last ran
  // (7d94ba1) and as bench/gpu/host_pool_import maps imported ones; one call
  // over the whole view would be about 12% cheaper per block
  // (vmm-costs-H100-c6714d8: 0.140 against 0.159 ms per 8 MiB) but has not
  // run on a GPU yet.
  CUmemAccessDesc access[2] = {deviceAccess(), {}};
  access[1].location = hostLocation_;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  // HostOnly: the CPU's descriptor alone.
  CUmemAccessDesc* opened = reach_ == Reach::HostOnly ? &access[1] : access;
  const std::size_t openedCount = reach_ == Reach::HostOnly ? 1 : 2;
  for (std::size_t i = 0; i < chunk.blocks.size() && result == CUDA_SUCCESS; ++i) {
    const CUdeviceptr at = chunk.view + i * chunk.blockBytes;
    result = api_.cuMemMap(at, chunk.blockBytes, 0, chunk.blocks[i].get(), 0);
    if (result != CUDA_SUCCESS) break;
    ++chunk.blocksMapped;
    result = api_.cuMemSetAccess(at, chunk.blockBytes, opened, openedCount);
  }
  return result;
}

void HostBlocks::addChunk(Chunk chunk, std::vector<HostBlock>* blocks) {
  blocks->clear();
  for (std::size_t i = 0; i < chunk.blocks.size(); ++i)
    blocks->push_back(HostBlock{chunk.blocks[i].get(), 0,
                                reinterpret_cast<std::byte*>(chunk.view + i * chunk.blockBytes), chunk.blockBytes});
  chunk.blocksLeft = chunk.blocks.size();
  std::lock_guard lock(mutex_);
  chunks_.emplace(chunk.view, std::move(chunk));
}

Status HostBlocks::exportBlock(const HostBlock& block, LentHostBlock* lent) const {
  if (lent == nullptr || api_.cuMemExportToShareableHandle == nullptr) return Status::NotSupported;
  int descriptor = -1;
  const CUresult result =
      api_.cuMemExportToShareableHandle(&descriptor, static_cast<CUmemGenericAllocationHandle>(block.handle),
                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("cuMemExportToShareableHandle (host block)", result));
    return toStatus(result);
  }
  *lent = LentHostBlock{descriptor, 0, block.bytes};
  return Status::Success;
}

Status HostBlocks::importBlocks(std::span<const LentHostBlock> lent, std::vector<HostBlock>* blocks) {
  if (blocks == nullptr || lent.empty()) return Status::InvalidValue;
  if (api_.cuMemImportFromShareableHandle == nullptr) return Status::NotSupported;
  Chunk chunk;
  chunk.blockBytes = lent.front().bytes;
  chunk.bytes = chunk.blockBytes * lent.size();
  for (const LentHostBlock& block : lent)
    if (block.bytes != chunk.blockBytes || block.offset != 0 || block.descriptor < 0) return Status::InvalidValue;
  CUresult result = CUDA_SUCCESS;
  for (std::size_t i = 0; i < lent.size() && result == CUDA_SUCCESS; ++i) {
    CUmemGenericAllocationHandle handle = 0;
    // The driver takes the descriptor's number as the pointer's value.
    result = api_.cuMemImportFromShareableHandle(
        &handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(lent[i].descriptor)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (result == CUDA_SUCCESS) chunk.blocks.emplace_back(handle, PhysicalMemoryReleaser{api_.cuMemRelease});
  }
  if (result == CUDA_SUCCESS) result = mapChunk(chunk);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "{}", api_.describe("importing lent host blocks", result));
    releaseChunk(chunk);
    return toStatus(result);
  }
  addChunk(std::move(chunk), blocks);
  return Status::Success;
}

void HostBlocks::releaseChunk(Chunk& chunk) {
  // Blocks map at the view's start in order, the first blocksMapped of them.
  for (std::size_t i = 0; i < chunk.blocksMapped; ++i)
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
