#include "device/cuda/fence_table.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "common/log.hpp"
#include "device/cuda/cu_status.hpp"

namespace mqx::device::cuda {
namespace {

// The legacy default stream has two names; the per-thread default stream has
// one name for many streams (one per thread), told apart by cuStreamGetId.
bool isLegacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }
bool isPerThread(CUstream stream) { return stream == CU_STREAM_PER_THREAD; }

} // namespace

FenceTable::FenceTable(const DriverApi& api, unsigned coalesceMicroseconds)
    : api_(api), coalesce_(coalesceMicroseconds) {}

Status FenceTable::addBlock() {
  Block block;
  CUresult result = allocatePinned(api_, kSlotsPerBlock * sizeof(std::uint64_t),
                                   CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP, &block.memory);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Error, "fence words: {}", api_.describe("cuMemHostAlloc", result));
    return toStatus(result);
  }
  result = api_.cuMemHostGetDevicePointer_v2(&block.devicePointer, block.memory.get(), 0);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Error, "fence words: {}", api_.describe("cuMemHostGetDevicePointer", result));
    return toStatus(result);
  }
  auto* words = static_cast<std::uint64_t*>(block.memory.get());
  for (std::size_t i = 0; i < kSlotsPerBlock; ++i)
    words[i] = 0;
  blocks_.push_back(std::move(block));
  return Status::Success;
}

volatile std::uint64_t* FenceTable::word(std::uint32_t slot) const {
  auto* words = static_cast<std::uint64_t*>(blocks_[slot / kSlotsPerBlock].memory.get());
  return words + slot % kSlotsPerBlock;
}

CUdeviceptr FenceTable::deviceWord(std::uint32_t slot) const {
  return blocks_[slot / kSlotsPerBlock].devicePointer + (slot % kSlotsPerBlock) * sizeof(std::uint64_t);
}

Status FenceTable::slotFor(CUstream stream, std::uint32_t* slot) {
  if (isLegacy(stream)) stream = nullptr;
  unsigned long long streamId = 0;
  bool byId =
      isPerThread(stream) && api_.cuStreamGetId != nullptr && api_.cuStreamGetId(stream, &streamId) == CUDA_SUCCESS;
  if (byId) {
    if (auto it = byStreamId_.find(streamId); it != byStreamId_.end()) return *slot = it->second, Status::Success;
  } else if (auto it = byStream_.find(stream); it != byStream_.end()) {
    slots_[it->second].retired = false; // a new stream with a retired one's handle
    return *slot = it->second, Status::Success;
  }
  if (slots_.size() == blocks_.size() * kSlotsPerBlock) MQX_TRY(addBlock());
  *slot = static_cast<std::uint32_t>(slots_.size());
  slots_.push_back(Slot{0, 0, stream, isPerThread(stream), false, {}});
  if (byId) {
    byStreamId_[streamId] = *slot;
  } else {
    byStream_[stream] = *slot;
  }
  return Status::Success;
}

Status FenceTable::write(std::uint32_t slot) {
  Slot& entry = slots_[slot];
  // The default flags put a memory barrier before the write: everything the
  // stream did before is visible once the value is.
  CUresult result =
      api_.cuStreamWriteValue64_v2(entry.stream, deviceWord(slot), entry.next, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (result != CUDA_SUCCESS) {
    log(LogLevel::Warn, "fence: {}", api_.describe("cuStreamWriteValue64", result));
    return toStatus(result);
  }
  entry.written = entry.next;
  if (coalesce_.count() > 0) entry.lastWrite = std::chrono::steady_clock::now();
  return Status::Success;
}

Status FenceTable::enqueue(StreamHandle handle, Fence* fence) {
  auto stream = reinterpret_cast<CUstream>(handle);
  std::lock_guard lock(mutex_);
  std::uint32_t slot = 0;
  MQX_TRY(slotFor(stream, &slot));
  Slot& entry = slots_[slot];
  ++entry.next;
  bool owe = coalesce_.count() > 0 && !entry.perThread && !entry.exact &&
             std::chrono::steady_clock::now() - entry.lastWrite < coalesce_;
  if (!owe) {
    if (Status status = write(slot); !ok(status)) {
      --entry.next;
      return status;
    }
  }
  fence->slot = slot;
  fence->value = entry.next;
  return Status::Success;
}

Status FenceTable::writeEveryFence(StreamHandle handle) {
  std::lock_guard lock(mutex_);
  std::uint32_t slot = 0;
  MQX_TRY(slotFor(reinterpret_cast<CUstream>(handle), &slot));
  slots_[slot].exact = true;
  return Status::Success;
}

void FenceTable::retire(StreamHandle handle) {
  auto stream = reinterpret_cast<CUstream>(handle);
  if (isLegacy(stream) || isPerThread(stream)) return;
  std::lock_guard lock(mutex_);
  auto it = byStream_.find(stream);
  if (it == byStream_.end()) return;
  Slot& entry = slots_[it->second];
  // The stream runs its work to the end; a fence not written is waited for
  // by nobody once the stream is gone.
  if (entry.written < entry.next)
    if (Status written = write(it->second); !ok(written))
      log(LogLevel::Warn, "fence of a destroyed stream not written: {}", toString(written));
  entry.retired = true;
}

bool FenceTable::seen(const Fence& fence) const {
  // The device writes the word over PCIe; an acquire fence orders what the
  // caller reads next after it.
  std::uint64_t value = *word(fence.slot);
  std::atomic_thread_fence(std::memory_order_acquire);
  return value >= fence.value;
}

bool FenceTable::reached(const Fence& fence) {
  // An owed write stays owed: the core polls on every launch, and making it
  // here would write once per launch again. wait() makes it.
  std::lock_guard lock(mutex_);
  return fence.slot < slots_.size() && seen(fence);
}

Status FenceTable::wait(const Fence& fence) {
  using namespace std::chrono;
  CUstream stream = nullptr;
  bool retired = false;
  {
    std::lock_guard lock(mutex_);
    if (fence.slot >= slots_.size() || fence.value > slots_[fence.slot].next) return Status::InvalidValue;
    retired = slots_[fence.slot].retired;
    if (fence.value > slots_[fence.slot].written && !retired) MQX_TRY(write(fence.slot));
    stream = slots_[fence.slot].stream;
  }
  auto start = steady_clock::now();
  auto lastCheck = start;
  unsigned drained = 0;
  for (;;) {
    if (reached(fence)) return Status::Success;
    auto now = steady_clock::now();
    if (now - start < microseconds(50)) continue; // short waits: spin
    std::this_thread::sleep_for(now - start < milliseconds(2) ? microseconds(10) : microseconds(100));
    if (now - lastCheck < milliseconds(20)) continue;
    lastCheck = now;
    // A destroyed stream cannot be asked; its last write was made before
    // it went (retire), so the word comes, or the device failed.
    if (retired) {
      if (now - start < seconds(60)) continue;
      log(LogLevel::Error, "fence wait: fence {} of a destroyed stream not written after 60 s", fence.value);
      return Status::Unknown;
    }
    // A failed stream never writes the value: report its error instead of
    // hanging. A stream that drained must have written it (re-read once).
    CUresult result = api_.cuStreamQuery(stream);
    if (result == CUDA_ERROR_NOT_READY) {
      drained = 0;
      continue;
    }
    if (reached(fence)) return Status::Success;
    if (result != CUDA_SUCCESS) {
      log(LogLevel::Error, "fence wait: {}", api_.describe("cuStreamQuery", result));
      return toStatus(result);
    }
    // The per-thread default stream's name means another stream on this
    // thread, so "drained" proves nothing for it. Elsewhere a drained stream
    // seen three times in a row (60 ms) has lost the write.
    if (!isPerThread(stream) && ++drained >= 3) {
      log(LogLevel::Error, "fence wait: stream drained without writing fence {} of slot {}", fence.value, fence.slot);
      return Status::Unknown;
    }
  }
}

} // namespace mqx::device::cuda
