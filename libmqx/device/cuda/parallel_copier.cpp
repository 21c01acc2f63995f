#include "device/cuda/parallel_copier.hpp"

#include <algorithm>
#include <cstring>

#include "common/types.hpp"
#include "device/cuda/streaming_copy.hpp"

namespace mqx::device::cuda {

ParallelCopier::ParallelCopier(unsigned workers) {
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i)
    threads_.emplace_back([this] { workerLoop(); });
}

ParallelCopier::~ParallelCopier() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_)
    thread.join();
}

void ParallelCopier::copyPiece(void* destination, const void* source, std::size_t bytes, Stores stores) {
  if (stores == Stores::Streaming)
    streamingCopy(destination, source, bytes);
  else
    std::memcpy(destination, source, bytes);
}

void ParallelCopier::runPieces() {
  for (;;) {
    std::size_t piece = nextPiece_.fetch_add(1, std::memory_order_relaxed);
    if (piece >= pieces_) return;
    std::size_t offset = piece * pieceBytes_;
    copyPiece(destination_ + offset, source_ + offset, std::min(pieceBytes_, bytes_ - offset), stores_);
  }
}

void ParallelCopier::workerLoop() {
  std::unique_lock lock(mutex_);
  std::uint64_t seen = 0;
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++participants_;
    lock.unlock();
    runPieces();
    lock.lock();
    if (--participants_ == 0) finished_.notify_all();
  }
}

void ParallelCopier::copy(void* destination, const void* source, std::size_t bytes, Stores stores) {
  std::size_t lanes = threads_.size() + 1;
  if (threads_.empty() || bytes < 2 * kMinPiece) {
    copyPiece(destination, source, bytes, stores);
    return;
  }
  std::lock_guard call(callMutex_);
  {
    std::unique_lock lock(mutex_);
    // A worker that woke late for the previous job may still be looking at
    // it; the job's fields change only once it is gone.
    finished_.wait(lock, [&] { return participants_ == 0; });
    destination_ = static_cast<char*>(destination);
    source_ = static_cast<const char*>(source);
    bytes_ = bytes;
    pieceBytes_ = roundUp(std::max(kMinPiece, (bytes + lanes - 1) / lanes), 4096);
    pieces_ = (bytes + pieceBytes_ - 1) / pieceBytes_;
    stores_ = stores;
    nextPiece_.store(0, std::memory_order_relaxed);
    ++generation_;
  }
  wake_.notify_all();
  runPieces();
  std::unique_lock lock(mutex_);
  // Every piece was taken once the caller ran out; wait for those in flight.
  finished_.wait(lock, [&] { return participants_ == 0; });
}

} // namespace mqx::device::cuda
