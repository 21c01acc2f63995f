// The simulated device as a QueryDevice: buffers, copies and launches go
// through libmqx's MemoryManager on the SimBackend (libmqx/embedded), so a
// query on it exercises what libmqx does for a GPU query: lazy copy-on-write
// uploads, access advice, residency, eviction and, when mqxd runs, the node
// budget and cross-process eviction. Each operator is its host kernel
// (sim_kernels.hpp) registered with its parameter layout and launched with
// the advice its CUDA operator gives (operator_advice.hpp).
#pragma once

#include "ssb/gpu/query_device.hpp"

#include "config/config.hpp"
#include "core/statistics.hpp"
#include "device/sim/sim_backend.hpp"

#include <memory>
#include <string>

namespace mqx::embedded {
class SimDevice;
}

namespace mqx::ssb::gpu {

// What the memory manager did during the query (printed by the programs,
// read by the pipeline test and the experiment drivers).
struct SimDeviceReport {
  Statistics statistics;
  device::SimTransferTotals transfers;
  bool onNode = false; // drew on mqxd's node budget
};

class SimQueryDevice final : public QueryDevice {
public:
  // Joins mqxd's node as `clientName` when a daemon runs (docs/daemon.md).
  SimQueryDevice(const Config &config, const std::string &clientName);
  ~SimQueryDevice() override;

  SimDeviceReport report() const;
  std::string name() const override { return "sim"; }

  void upload(void *device, const void *host, std::size_t bytes) override;
  void download(void *host, const void *device, std::size_t bytes) override;
  void zero(void *device, std::size_t bytes) override;
  void synchronize() override;

  std::int32_t selectRows(const std::int32_t *column, const std::int32_t *selection, std::int32_t n,
                          ValueSet accepted, std::int32_t *out, std::uint32_t *counter) override;
  void gather(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
              std::int32_t *out) override;
  void buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                      const std::int32_t *selection, std::int32_t n,
                      DeviceHashTable table) override;
  std::int32_t probeHashTable(const std::int32_t *foreignKeys, const std::int32_t *selection,
                              std::int32_t n, DeviceHashTable table, std::int32_t *rowsOut,
                              std::int32_t *positionsOut, std::int32_t *payloadOut,
                              std::uint32_t *counter) override;
  void aggregateGroups(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                       const std::int32_t *second, std::int32_t n, std::int64_t slots,
                       unsigned long long *sums, unsigned long long *counts) override;
  void runFusedStar(const FusedStar &star, std::int32_t n, unsigned long long *sums,
                    unsigned long long *counts) override;

protected:
  void *allocateBytes(std::size_t bytes) override;
  void freeBytes(void *buffer) noexcept override;

private:
  struct Kernels;
  std::int32_t readCounter(const std::uint32_t *counter);
  std::unique_ptr<embedded::SimDevice> device_;
  std::unique_ptr<Kernels> kernels_;
};

} // namespace mqx::ssb::gpu
