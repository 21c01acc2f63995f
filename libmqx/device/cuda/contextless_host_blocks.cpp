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
  // At the node the probe chose (the device's own where the driver names
  // one), not node 0: the two may differ on a host of several NUMA nodes.
  opened->granularity_ = opened->blocks_.lendableGranularity();
  if (opened->granularity_ == 0) {
    *why = "the driver lends no host NUMA memory here (no exportable host blocks)";
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
