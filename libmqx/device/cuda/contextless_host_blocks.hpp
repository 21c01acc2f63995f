// ContextlessHostBlocks: lendable host blocks made with no CUDA context, for
// mqxd's pool (docs/daemon.md, "Lent host blocks"). A context holds ~524 MiB
// of its device for as long as it lives; host-located memory needs none:
// created, mapped for the CPU and exported with only cuInit done, these
// blocks took 3 MiB of an H100, and a borrower with a context imported them
// and saw every word (bench/results/host-block-contextless-H100-c7eaabd.txt).
// The blocks are open to the CPU only (HostBlocks::Reach::HostOnly): the
// lender zeroes them, each borrower opens its import to its own device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device/cuda/driver_api.hpp"
#include "device/cuda/host_blocks.hpp"
#include "device/device_backend.hpp"

namespace mqx::device::cuda {

class ContextlessHostBlocks final : public HostBlockMaker {
public:
  // Host memory near device `ordinal` (its NUMA node). NotSupported, with
  // the reason in `why`, where the driver cannot make lendable host blocks
  // (no host NUMA memory: only it can be exported).
  static Status open(const DriverApi& api, int ordinal, std::unique_ptr<ContextlessHostBlocks>* out, std::string* why);

  std::size_t granularity() const override { return granularity_; }
  Status createLendableHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) override;
  Status exportHostBlock(const HostBlock& block, LentHostBlock* lent) override;
  void destroyHostBlocks(const std::vector<HostBlock>& blocks) override;

private:
  ContextlessHostBlocks(const DriverApi& api, CUdevice device);

  HostBlocks blocks_;
  std::size_t granularity_ = 0;
};

} // namespace mqx::device::cuda
