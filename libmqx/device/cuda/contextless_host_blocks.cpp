#include "device/cuda/contextless_host_blocks.hpp"

#include "device/cuda/cu_status.hpp"

namespace mqx::device::cuda {

ContextlessHostBlocks::ContextlessHostBlocks(const DriverApi& api, CUdevice device)
    : blocks_(api, device, HostBlocks::Reach::HostOnly) {}

Status ContextlessHostBlocks::open(const DriverApi& api, int ordinal, std::unique_ptr<ContextlessHostBlocks>* out,
                                   std::string* why) {
  CUdevice device = 0;
  CUresult result = api.cuInit(0);
  if (result == CUDA_SUCCESS) result = api.cuDeviceGet(&device, ordinal);
  if (result != CUDA_SUCCESS) {
    *why = api.describe("device " + std::to_string(ordinal), result);
    return toStatus(result);
  }
  std::unique_ptr<ContextlessHostBlocks> opened(new ContextlessHostBlocks(api, device));
  // The host location the driver accepts (its granularity is the blocks').
  if (Status status = opened->blocks_.probe(); !ok(status)) {
    *why = "the driver maps no host-located memory here";
    return status;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  result = api.cuMemGetAllocationGranularity(&opened->granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (result != CUDA_SUCCESS || opened->granularity_ == 0) {
    *why = api.describe("the granularity of lendable host memory", result);
    return Status::NotSupported;
  }
  *out = std::move(opened);
  return Status::Success;
}

Status ContextlessHostBlocks::createLendableHostBlocks(std::size_t bytes, std::size_t count,
                                                       std::vector<HostBlock>* blocks) {
  if (bytes == 0 || count == 0 || bytes % granularity_ != 0 || blocks == nullptr) return Status::InvalidValue;
  return blocks_.create(bytes, count, blocks, true);
}

Status ContextlessHostBlocks::exportHostBlock(const HostBlock& block, LentHostBlock* lent) {
  return blocks_.exportBlock(block, lent);
}

void ContextlessHostBlocks::destroyHostBlocks(const std::vector<HostBlock>& blocks) { blocks_.destroy(blocks); }

} // namespace mqx::device::cuda
