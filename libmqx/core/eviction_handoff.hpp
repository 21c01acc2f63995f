// EvictionHandoff: another process's eviction request, passed to the thread
// that holds the manager's lock while its operation yields (docs/daemon.md,
// "yielding"). The yielding thread cannot give the lock up in the middle of
// an operation (other threads of the application could then change the
// regions the operation names), but while it waits for its turn it may evict
// for the older process itself: the pages of its pending operation hold
// nothing it still needs (it reloads them after its turn). Without this the
// older process gets nothing from the younger and runs out of memory when
// it needs more than the younger gave back.
//
// One request at a time (a process serves eviction requests on one thread).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

namespace mqx {

class EvictionHandoff {
public:
  // The lock holder, when its operation starts or stops yielding. Closing
  // answers a request it has not taken with nullopt (the server then waits
  // for the lock as usual).
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
  }
  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
    changed_.notify_all();
  }

  // The server's side: the bytes the lock holder freed for `bytes` (region
  // `preferred` first), or nullopt when it is not yielding (any more) or did
  // not take the request by `deadline`.
  std::optional<std::size_t> request(std::size_t bytes, std::uint64_t preferred,
                                     std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (!open_ || pending_) return std::nullopt;
    pending_ = true;
    taken_ = false;
    bytes_ = bytes;
    preferred_ = preferred;
    changed_.notify_all();
    changed_.wait_until(lock, deadline, [&] { return taken_ || !open_; });
    // Once taken, the holder answers (an eviction never waits for device
    // work); an untaken request is withdrawn.
    if (taken_) changed_.wait(lock, [&] { return answered_; });
    std::optional<std::size_t> result;
    if (answered_) result = freed_;
    pending_ = taken_ = answered_ = false;
    return result;
  }

  // The lock holder's side: serves the pending request, if one comes within
  // `wait`, with `evict(bytes, preferred)`. The bytes freed (0 for none).
  template <typename Evict> std::size_t serve(std::chrono::microseconds wait, Evict&& evict) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, wait, [&] { return pending_ && !taken_; })) return 0;
    taken_ = true;
    const std::size_t bytes = bytes_;
    const std::uint64_t preferred = preferred_;
    lock.unlock();
    const std::size_t freed = evict(bytes, preferred);
    lock.lock();
    freed_ = freed;
    answered_ = true;
    changed_.notify_all();
    return freed;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  bool pending_ = false;  // a request is posted
  bool taken_ = false;    // the holder is serving it
  bool answered_ = false; // freed_ holds its answer
  std::size_t bytes_ = 0;
  std::uint64_t preferred_ = 0;
  std::size_t freed_ = 0;
};

} // namespace mqx
