// SimBackend: the simulated device. Host memory stands in for device memory:
// a reserved range is an inaccessible host mapping, map() makes part of it
// readable and writable (and poisons it, as fresh device memory holds
// garbage), unmap() drops it again. Capacity is enforced like the GPU's:
// mapping past it fails with OutOfMemory. Streams run in order on their own
// threads; kernels are host functions run on a stream with their parameters.
// Copies are charged at a configured bandwidth so that benchmarks see
// transfer costs; with `realtime` they also take that long. The backend gets
// its own options (the configuration's [sim] section), built from Config
// where the runtime is assembled (embedded/runtime_options.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/files.hpp"
#include "device/device_backend.hpp"
#include "device/resizable_launches.hpp"
#include "device/sim/sim_link.hpp"
#include "device/sim/sim_stream.hpp"

namespace mqx::device {

struct SimKernelContext {
  unsigned grid[3];
  unsigned block[3];
};

// A simulated kernel: reads its parameters like a CUDA kernel would, from
// an array of pointers to parameter values.
using SimKernel = std::function<void(const SimKernelContext&, void** params)>;

// The simulated device's shape and speed (sim.* in configs/default.toml, whose
// defaults these are).
struct SimBackendOptions {
  std::size_t capacity = std::size_t{1} << 30; // device memory, bytes
  std::size_t granularity = 2 * 1024 * 1024;   // of reservations and mappings
  double copyBandwidthGBps = 25.0;             // host <-> device copies
  double deviceBandwidthGBps = 1000.0;         // copies and fills on the device
  bool realtime = false;                       // transfers take their charged time
  // With realtime: the node-wide copy link of this name (SimLink), shared by
  // every process that names it; "": each process its own.
  std::string linkName;
  double mapCostMicroseconds = 0; // with realtime: each map and unmap takes this long, on the link when shared
};

struct SimTransferTotals {
  std::uint64_t bytesToDevice = 0;
  std::uint64_t bytesToHost = 0;
  std::uint64_t bytesOnDevice = 0;
  double secondsToDevice = 0; // simulated time at the configured bandwidth
  double secondsToHost = 0;
  double secondsOnDevice = 0;
};

// Faults a test injects into the simulated device (tests/faults): pinned
// host memory refused, the process SIGKILLed inside its Nth transfer in a
// direction (a copy to the host is an eviction's write-back, a copy to the
// device a load), or the Nth copy to the host after injectFaults refused
// with IllegalAddress (the core's failure paths). Zero: never.
struct SimFaults {
  bool failHostAllocations = false;
  std::uint64_t killAtCopyToHost = 0;
  std::uint64_t killAtCopyToDevice = 0;
  std::uint64_t failCopyToHostAt = 0;
};

class SimBackend final : public DeviceBackend {
public:
  explicit SimBackend(const SimBackendOptions& options);
  ~SimBackend() override;

  // Application-side helpers (what cuStreamCreate and module loading are on a
  // GPU).
  StreamHandle createStream();
  Status destroyStream(StreamHandle stream);
  // `properties` are what a CUDA binary declares of a kernel (name,
  // registers, static shared memory, block limit), for launch tuning.
  FunctionHandle registerKernel(SimKernel kernel, std::vector<ParamInfo> layout, KernelProperties properties = {});
  // What cuFuncGetName and cuFuncGetAttribute report on a GPU.
  Status kernelProperties(FunctionHandle function, KernelProperties* properties) const;
  // The simulated device as cuDeviceGetAttribute would report it: an H100
  // SXM5 (sm_90), the device the launch optimizer is tuned for on sim.
  static kernelopt::DeviceAttributes deviceAttributes();
  SimTransferTotals transferTotals() const;
  std::size_t mappedBytes() const;
  void injectFaults(const SimFaults& faults);
  std::uint64_t hostAllocationsRefused() const { return hostAllocationsRefused_.load(); }

  std::string_view name() const override { return "sim"; }
  std::size_t granularity() const override { return granularity_; }
  std::size_t totalMemory() const override { return capacity_; }
  std::size_t freeMemory() const override;

  Status reserve(std::size_t bytes, DevicePtr* base) override;
  Status release(DevicePtr base, std::size_t bytes) override;
  Status map(DevicePtr address, std::size_t bytes) override;
  Status unmap(DevicePtr address, std::size_t bytes) override;

  Status shareMapping(DevicePtr address, std::size_t bytes, int* descriptor) override;
  Status mapShared(DevicePtr address, std::size_t bytes, int descriptor) override;

  Status createHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) override;
  void destroyHostBlocks(const std::vector<HostBlock>& blocks) override;
  // Every host block is in a shared-memory file: lendable as made.
  Status createLendableHostBlocks(std::size_t bytes, std::size_t count, std::vector<HostBlock>* blocks) override {
    return createHostBlocks(bytes, count, blocks);
  }
  Status exportHostBlock(const HostBlock& block, LentHostBlock* lent) override;
  Status importHostBlocks(std::span<const LentHostBlock> lent, std::vector<HostBlock>* blocks) override;
  Status mapHostBlocks(std::span<const HostMapping> mappings) override;
  // Bytes of host blocks mapped under device ranges right now.
  std::size_t hostMappedBytes() const;

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

private:
  struct Kernel {
    SimKernel function;
    std::vector<ParamInfo> layout;
    KernelProperties properties;
  };
  struct StreamRecord {
    std::unique_ptr<SimStream> stream;
    std::uint32_t fenceSlot;
    std::uint64_t nextFence = 0;
  };

  SimStream* streamFor(StreamHandle handle, std::uint32_t* fenceSlot = nullptr);
  bool rangeMapped(DevicePtr address, std::size_t bytes) const;
  // Checks that [address, address + bytes) lies in a reservation and maps
  // nothing yet (mutex_ held).
  bool mappableLocked(DevicePtr address, std::size_t bytes) const;
  void chargeMapping(); // sim.map_cost_us of one map or unmap, realtime only
  void charge(std::uint64_t bytes, double gigabytesPerSecond, std::uint64_t SimTransferTotals::*counter,
              double SimTransferTotals::*seconds);

  std::size_t capacity_;
  std::size_t granularity_;
  double copyBandwidth_;
  double deviceBandwidth_;
  bool realtime_;
  std::chrono::duration<double, std::micro> mapCost_;
  std::unique_ptr<SimLink> link_; // realtime with a link name: copies share the node's link

  mutable std::mutex mutex_;
  std::map<DevicePtr, std::size_t> reservations_; // base -> bytes
  // One mapping under a reserved range: device memory (counted against the
  // capacity) or a host block.
  struct Mapping {
    std::size_t bytes = 0;
    bool host = false;
    // Device memory in a shared-memory file (shareMapping), or another
    // process's (mapShared, which counts against nothing here): the file
    // that holds it, closed when it is unmapped.
    std::shared_ptr<FileDescriptor> shared;
    bool imported = false;
    std::size_t fileOffset = 0; // where in `shared` it starts
  };
  std::map<DevicePtr, Mapping> mappings_; // by address
  std::size_t mapped_ = 0;                // device bytes
  std::size_t hostMapped_ = 0;
  // Host blocks: a shared-memory file per createHostBlocks call, mapped
  // once for the CPU (the blocks' `host`) and again under device ranges by
  // mapHost, as cuMemCreate'd host memory is on the GPU.
  struct HostChunk {
    int file = -1;
    std::byte* view = nullptr;
    std::size_t bytes = 0;      // the view's
    std::size_t viewOffset = 0; // where in the file the view starts (an imported block's offset)
    std::size_t blocksLeft = 0; // destroyed with its last block
    ~HostChunk();
  };
  std::map<std::uint64_t, std::unique_ptr<HostChunk>> hostChunks_;
  std::uint64_t nextHostChunk_ = 1;
  std::unordered_map<StreamHandle, StreamRecord> streams_;
  StreamHandle nextStream_ = 0x5100;
  std::unordered_map<FunctionHandle, Kernel> kernels_;
  FunctionHandle nextKernel_ = 0xf000;
  std::unique_ptr<std::atomic<std::uint64_t>[]> fenceWords_;
  std::uint32_t fenceSlots_ = 0;
  SimTransferTotals totals_;
  void maybeKillInTransfer(TransferDirection direction);
  SimFaults faults_;
  std::atomic<std::uint64_t> copiesToHost_{0}, copiesToDevice_{0}, hostAllocationsRefused_{0};
  std::uint64_t failingCopyToHost_ = 0; // copiesToHost_'s value that fails (SimFaults::failCopyToHostAt)
};

} // namespace mqx::device
