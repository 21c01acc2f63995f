#include "device/sim/sim_stream.hpp"

namespace mqx::device {

SimStream::SimStream() : worker_([this] { run(); }) {}

SimStream::~SimStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void SimStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ++enqueued_;
  }
  wake_.notify_one();
}

void SimStream::synchronize() {
  std::unique_lock lock(mutex_);
  std::uint64_t target = enqueued_;
  drained_.wait(lock, [&] { return completed_ >= target; });
}

void SimStream::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return; // stopping and drained
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    // Its captures go before it counts as done, and without the lock: once
    // synchronize() returns nothing of the task runs (a capture's destructor
    // may free memory, and free() may call into a memory manager).
    task = nullptr;
    lock.lock();
    ++completed_;
    drained_.notify_all();
  }
}

} // namespace mqx::device
