// The device a query runs on: its memory (allocate, copies, zeroing) and
// its operators, with the semantics of operators.hpp. Two implementations:
// CudaDevice (the GPU; under libmqx when preloaded) and SimQueryDevice (the
// simulated device of libmqx/embedded, each operator a host kernel launched
// through mqx's MemoryManager with the same advice as on the GPU). The
// executor (executor.hpp) runs a plan on either; each operator returns once
// its result is complete. Failures throw DeviceError.
#pragma once

#include "ssb/gpu/operator_types.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace mqx::ssb::gpu {

// A device call failed (out of memory, a launch error): the query fails.
class DeviceError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class QueryDevice {
public:
  virtual ~QueryDevice() = default;
  QueryDevice() = default;
  QueryDevice(const QueryDevice &) = delete;
  QueryDevice &operator=(const QueryDevice &) = delete;

  // What the results name as the device ("NVIDIA H100 80GB HBM3", "sim").
  virtual std::string name() const = 0;

  // Device memory, counted: the most bytes the query held at once is what a
  // variant needs on the device (fusion's saving shows there).
  void *allocate(std::size_t bytes) {
    void *buffer = allocateBytes(bytes);
    currentBytes_ += bytes;
    peakBytes_ = std::max(peakBytes_, currentBytes_);
    stepPeakBytes_ = std::max(stepPeakBytes_, currentBytes_);
    return buffer;
  }
  void release(void *buffer, std::size_t bytes) noexcept {
    freeBytes(buffer);
    currentBytes_ -= bytes;
  }
  std::size_t peakBytes() const { return peakBytes_; }
  void resetPeak() { peakBytes_ = stepPeakBytes_ = currentBytes_; }
  // The most bytes held since the previous call (per operator: the memory
  // column of the query's operator plan, docs/daemon.md).
  std::size_t takeStepPeak() { return std::exchange(stepPeakBytes_, currentBytes_); }

  // Synchronous copies and zeroing.
  virtual void upload(void *device, const void *host, std::size_t bytes) = 0;
  virtual void download(void *host, const void *device, std::size_t bytes) = 0;
  virtual void zero(void *device, std::size_t bytes) = 0;
  // Waits for everything the device was given.
  virtual void synchronize() = 0;

  // The operators (operators.hpp and fused_star.hpp say what each computes).
  virtual std::int32_t selectRows(const std::int32_t *column, const std::int32_t *selection,
                                  std::int32_t n, ValueSet accepted, std::int32_t *out,
                                  std::uint32_t *counter) = 0;
  virtual void gather(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
                      std::int32_t *out) = 0;
  virtual void buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                              const std::int32_t *selection, std::int32_t n,
                              DeviceHashTable table) = 0;
  virtual std::int32_t probeHashTable(const std::int32_t *foreignKeys,
                                      const std::int32_t *selection, std::int32_t n,
                                      DeviceHashTable table, std::int32_t *rowsOut,
                                      std::int32_t *positionsOut, std::int32_t *payloadOut,
                                      std::uint32_t *counter) = 0;
  virtual void aggregateGroups(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                               const std::int32_t *second, std::int32_t n, std::int64_t slots,
                               unsigned long long *sums, unsigned long long *counts) = 0;
  virtual void runFusedStar(const FusedStar &star, std::int32_t n, unsigned long long *sums,
                            unsigned long long *counts) = 0;

protected:
  virtual void *allocateBytes(std::size_t bytes) = 0;
  virtual void freeBytes(void *buffer) noexcept = 0;

private:
  std::size_t currentBytes_ = 0;
  std::size_t peakBytes_ = 0;
  std::size_t stepPeakBytes_ = 0;
};

} // namespace mqx::ssb::gpu
