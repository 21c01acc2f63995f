// An owned array of T in a QueryDevice's memory. At least one element is
// allocated, so that an empty intermediate still has an address that advice
// and kernel parameters can name.
#pragma once

#include "ssb/gpu/query_device.hpp"

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace mqx::ssb::gpu {

template <class T> class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(QueryDevice& device, std::size_t size)
      : device_(&device), size_(size), data_(static_cast<T*>(device.allocate(bytesFor(size)))) {}
  static DeviceBuffer upload(QueryDevice& device, std::span<const T> host) {
    DeviceBuffer buffer(device, host.size());
    if (!host.empty()) device.upload(buffer.data_, host.data(), host.size() * sizeof(T));
    return buffer;
  }
  std::vector<T> download(std::size_t count) const {
    std::vector<T> host(count);
    if (count > 0) device_->download(host.data(), data_, count * sizeof(T));
    return host;
  }

  DeviceBuffer(DeviceBuffer&& other) noexcept
      : device_(std::exchange(other.device_, nullptr)), size_(std::exchange(other.size_, 0)),
        data_(std::exchange(other.data_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(size_, other.size_);
    std::swap(data_, other.data_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_) device_->release(data_, bytesFor(size_));
  }

  T* get() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return bytesFor(size_); }

private:
  static std::size_t bytesFor(std::size_t size) { return (size > 0 ? size : 1) * sizeof(T); }
  QueryDevice* device_ = nullptr;
  std::size_t size_ = 0;
  T* data_ = nullptr;
};

} // namespace mqx::ssb::gpu
