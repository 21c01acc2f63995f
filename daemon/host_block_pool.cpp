#include "host_block_pool.hpp"

#include <algorithm>

#include <unistd.h>

#include <fmt/format.h>

#include "common/log.hpp"
#include "device/sim/sim_backend.hpp"
#include "embedded/runtime_options.hpp"
#include "node_capacity.hpp" // probeDevices
#if MQX_DAEMON_WITH_CUDA
#include "device/cuda/contextless_host_blocks.hpp"
#include "device/cuda/driver_api.hpp"
#endif

namespace mqx::daemon {

struct NodeHostBlockPool::Backend {
#if MQX_DAEMON_WITH_CUDA
  // Before the maker, which uses them: the driver's entry points. No
  // context: the blocks are host memory, made with cuInit alone
  // (ContextlessHostBlocks), so mqxd holds next to nothing of the device (a
  // context held 524 MiB of an H100, which the node's budget had to leave
  // out).
  std::unique_ptr<device::cuda::DriverApi> api;
#endif
  std::unique_ptr<device::HostBlockMaker> maker;
};

NodeHostBlockPool::NodeHostBlockPool(std::unique_ptr<Backend> backend, std::unique_ptr<ipc::HostBlockLender> lender,
                                     std::size_t blockBytes, std::size_t mostBlocks)
    : backend_(std::move(backend)), lender_(std::move(lender)), blockBytes_(blockBytes), mostBlocks_(mostBlocks) {}

NodeHostBlockPool::~NodeHostBlockPool() { lender_.reset(); }

std::string NodeHostBlockPool::describe() const {
  return fmt::format("{} host blocks of {} MiB made to lend, up to {}", lender_->blocks(), blockBytes_ >> 20,
                     mostBlocks_);
}

std::unique_ptr<NodeHostBlockPool> NodeHostBlockPool::start(const Config& config, const std::string& socketName) {
  if (config.hostBlockPool == std::size_t{0}) return nullptr;
  bool gpu = config.backend == BackendKind::Cuda;
  if (config.backend == BackendKind::Auto) gpu = !probeDevices().empty();
  // "auto": a GPU node's only. On the simulated device a block is a
  // shared-memory file, which a client makes as fast as mqxd would.
  if (!config.hostBlockPool && !gpu) return nullptr;
  std::string why;
  auto backend = openBackend(config, gpu, &why);
  if (backend == nullptr) {
    log(LogLevel::Warn, "mqxd: no host block pool ({}): clients create their own", why);
    return nullptr;
  }
  // Blocks of a client's page: each maps whole under one page.
  const std::size_t granularity = backend->maker->granularity();
  const std::size_t blockBytes = (std::max(config.pageSize, granularity) + granularity - 1) / granularity * granularity;
  const std::size_t poolBytes = config.hostBlockPool.value_or(autoPoolBytes());
  const std::size_t blocks = std::max<std::size_t>(poolBytes / blockBytes, 1);
  // A size asked for is made whole before mqxd is ready; "auto" only its
  // first 1 GiB (enough to know the memory can be made), the rest in the
  // background (HostBlockLenderOptions::blocksAtStart says when).
  const std::size_t atStart =
      config.hostBlockPool ? blocks : std::min(blocks, std::max<std::size_t>((std::size_t{1} << 30) / blockBytes, 1));
  ipc::HostBlockLenderOptions options{socketName, blockBytes, blocks, atStart};
  auto lender = std::make_unique<ipc::HostBlockLender>(*backend->maker, std::move(options));
  if (Status status = lender->start(&why); !ok(status)) {
    log(LogLevel::Warn, "mqxd: no host block pool ({}): clients create their own", why);
    return nullptr;
  }
  std::unique_ptr<NodeHostBlockPool> pool(
      new NodeHostBlockPool(std::move(backend), std::move(lender), blockBytes, blocks));
  return pool;
}

std::size_t NodeHostBlockPool::autoPoolBytes() {
  // 8 GiB covers a PyTorch job at 1.15x an H100 of 16 GiB (it borrowed 3.4
  // GB) and most of one at 1.5x (8 GiB of its 9.3 GB of swap), and is what
  // an idle GPU node pins: at most a quarter of the host's memory, well
  // below the half each client may pin itself (memory.swap_buffer_limit).
  constexpr std::size_t kAutoBytes = std::size_t{8} << 30;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long pageBytes = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageBytes <= 0) return kAutoBytes;
  return std::min(kAutoBytes, static_cast<std::size_t>(pages) * static_cast<std::size_t>(pageBytes) / 4);
}

std::unique_ptr<NodeHostBlockPool::Backend> NodeHostBlockPool::openBackend(const Config& config, bool gpu,
                                                                           std::string* why) {
  auto opened = std::make_unique<NodeHostBlockPool::Backend>();
  if (!gpu) {
    opened->maker = std::make_unique<device::SimBackend>(embedded::simBackendOptions(config));
    return opened;
  }
#if MQX_DAEMON_WITH_CUDA
  opened->api = std::make_unique<device::cuda::DriverApi>();
  std::string error;
  if (!device::cuda::DriverApi::load(*opened->api, error)) {
    *why = "the CUDA driver: " + error;
    return nullptr;
  }
  // No context, so nothing of the device's memory to leave out of the node's
  // budget: 16 blocks took 3 MiB of an H100 (bench/results/
  // host-block-contextless-H100-c7eaabd.txt), inside the device's reserve
  // (deviceReserveBytes). The free memory NVML reports before and after is
  // no measure of it on a busy GPU: it counted every other process's
  // allocations too (22 MiB on an H200 beside the GPU suite, more than the
  // budget of a small daemon.capacity, which failed mqxd's start).
  std::unique_ptr<device::cuda::ContextlessHostBlocks> maker;
  if (!ok(device::cuda::ContextlessHostBlocks::open(*opened->api, 0, &maker, why))) return nullptr;
  opened->maker = std::move(maker);
  return opened;
#else
  *why = "mqxd was built without CUDA";
  return nullptr;
#endif
}

} // namespace mqx::daemon
