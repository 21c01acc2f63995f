// SimStream: one in-order queue of work executed by its own thread, the
// simulated device's stand-in for a CUDA stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace mqx::device {

class SimStream {
public:
  SimStream();
  ~SimStream();
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  void enqueue(std::function<void()> task);
  // Blocks until every task enqueued before the call has run.
  void synchronize();

private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<std::function<void()>> tasks_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t completed_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace mqx::device
