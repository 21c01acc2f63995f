#include "device/cuda/staging_ring.hpp"

#include <algorithm>
#include <deque>
#include <thread>

#include "common/log.hpp"
#include "device/cuda/cu_status.hpp"

namespace mqx::device::cuda {
namespace {

unsigned defaultCopyWorkers(unsigned requestedThreads) {
  unsigned threads = requestedThreads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency() / 2, 1U, 8U);
  return threads - 1; // the caller copies too
}

} // namespace

StagingRing::StagingRing(const DriverApi& api, const StagingOptions& options)
    : api_(api), options_(options), copier_(defaultCopyWorkers(options.copyThreads)) {}

Status StagingRing::ensureBuffers() {
  if (!buffers_.empty()) return Status::Success;
  std::vector<Buffer> buffers(std::max(options_.buffers, 2U));
  for (auto& buffer : buffers) {
    CUresult result = allocatePinned(api_, options_.chunkBytes, CU_MEMHOSTALLOC_PORTABLE, &buffer.memory);
    if (result == CUDA_SUCCESS) result = createEvent(api_, CU_EVENT_DISABLE_TIMING, &buffer.done);
    if (result != CUDA_SUCCESS) {
      log(LogLevel::Error, "staging buffers: {}", api_.describe("cuMemHostAlloc/cuEventCreate", result));
      return toStatus(result);
    }
  }
  buffers_ = std::move(buffers);
  return Status::Success;
}

Status StagingRing::drain(Buffer& buffer) {
  if (!buffer.pending) return Status::Success;
  CUresult result = api_.cuEventSynchronize(buffer.done.get());
  buffer.pending = false;
  if (result != CUDA_SUCCESS) log(LogLevel::Warn, "staging: {}", api_.describe("cuEventSynchronize", result));
  return toStatus(result);
}

Status StagingRing::toDevice(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream) {
  std::lock_guard lock(mutex_);
  MQX_TRY(ensureBuffers());
  const auto* from = static_cast<const char*>(source);
  for (std::size_t offset = 0; offset < bytes; offset += options_.chunkBytes) {
    std::size_t length = std::min(options_.chunkBytes, bytes - offset);
    Buffer& buffer = buffers_[next_++ % buffers_.size()];
    MQX_TRY(drain(buffer));
    copier_.copy(buffer.memory.get(), from + offset, length, ParallelCopier::Stores::Streaming);
    CUresult result = api_.cuMemcpyHtoDAsync_v2(destination + offset, buffer.memory.get(), length, stream);
    if (result == CUDA_SUCCESS) result = api_.cuEventRecord(buffer.done.get(), stream);
    if (result != CUDA_SUCCESS) {
      log(LogLevel::Warn, "staging: {}", api_.describe("cuMemcpyHtoDAsync", result));
      return toStatus(result);
    }
    buffer.pending = true;
  }
  return Status::Success;
}

Status StagingRing::toHost(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream) {
  std::lock_guard lock(mutex_);
  MQX_TRY(ensureBuffers());
  auto* to = static_cast<char*>(destination);
  struct InFlight {
    Buffer* buffer;
    std::size_t offset;
    std::size_t length;
  };
  std::deque<InFlight> inFlight;
  // Copies the oldest chunk out of its buffer once its DMA is done.
  auto retire = [&]() -> Status {
    InFlight oldest = inFlight.front();
    inFlight.pop_front();
    MQX_TRY(drain(*oldest.buffer));
    copier_.copy(to + oldest.offset, oldest.buffer->memory.get(), oldest.length);
    return Status::Success;
  };
  for (std::size_t offset = 0; offset < bytes; offset += options_.chunkBytes) {
    if (inFlight.size() == buffers_.size()) MQX_TRY(retire());
    std::size_t length = std::min(options_.chunkBytes, bytes - offset);
    Buffer& buffer = buffers_[next_++ % buffers_.size()];
    MQX_TRY(drain(buffer)); // a toDevice chunk may still be leaving it
    CUresult result = api_.cuMemcpyDtoHAsync_v2(buffer.memory.get(), source + offset, length, stream);
    if (result == CUDA_SUCCESS) result = api_.cuEventRecord(buffer.done.get(), stream);
    if (result != CUDA_SUCCESS) {
      log(LogLevel::Warn, "staging: {}", api_.describe("cuMemcpyDtoHAsync", result));
      while (!inFlight.empty())
        (void)retire(); // leave no buffer half-owned; the copy's failure is the one reported
      return toStatus(result);
    }
    buffer.pending = true;
    inFlight.push_back({&buffer, offset, length});
  }
  while (!inFlight.empty())
    MQX_TRY(retire());
  return Status::Success;
}

} // namespace mqx::device::cuda
