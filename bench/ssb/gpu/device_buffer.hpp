// An owned device array of T (cudaMalloc / cudaFree). At least one element is
// allocated, so that an empty intermediate still has an address that advice
// and kernel parameters can name.
#pragma once

#include "ssb/gpu/cuda_check.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace mqx::ssb::gpu {

// Device bytes held by all DeviceBuffers of the process, now and at most:
// what a query variant needs on the device (fusion's saving shows here).
struct DeviceBytes {
  std::size_t current = 0;
  std::size_t peak = 0;
};
inline DeviceBytes deviceBytes;

template <class T> class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t size) : size_(size) {
    MQX_SSB_CUDA(cudaMalloc(reinterpret_cast<void **>(&data_), bytesFor(size)));
    deviceBytes.current += bytesFor(size);
    deviceBytes.peak = std::max(deviceBytes.peak, deviceBytes.current);
  }
  static DeviceBuffer upload(const std::vector<T> &host) {
    DeviceBuffer buffer(host.size());
    if (!host.empty())
      MQX_SSB_CUDA(
          cudaMemcpy(buffer.data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return buffer;
  }
  std::vector<T> download(std::size_t count) const {
    std::vector<T> host(count);
    if (count > 0)
      MQX_SSB_CUDA(cudaMemcpy(host.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

  DeviceBuffer(DeviceBuffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (data_) {
      MQX_SSB_CUDA(cudaFree(data_));
      deviceBytes.current -= bytesFor(size_);
    }
  }

  T *get() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return bytesFor(size_); }

private:
  static std::size_t bytesFor(std::size_t size) { return (size > 0 ? size : 1) * sizeof(T); }
  T *data_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace mqx::ssb::gpu
