#include "ipc/robust_mutex.hpp"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "common/log.hpp"
#include "ipc/node_state.hpp"

namespace mqx::ipc {

RobustMutex::RobustMutex() {
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  const int error = pthread_mutex_init(&mutex_, &attributes);
  pthread_mutexattr_destroy(&attributes);
  if (error != 0) throw std::runtime_error(std::string("pthread_mutex_init: ") + std::strerror(error));
}

RobustMutex::~RobustMutex() { pthread_mutex_destroy(&mutex_); }

bool RobustMutex::lock(const LockWait& wait) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::optional<Clock::time_point> stoppedSince;
  for (;;) {
    // Short slices: the holder's state is looked at between them.
    const int error = lockOrError(std::chrono::milliseconds(100));
    if (error == 0) return false;
    if (error == EOWNERDEAD) {
      log(LogLevel::Warn, "a process died holding the node lock; recovering it");
      pthread_mutex_consistent(&mutex_);
      return true;
    }
    if (error != ETIMEDOUT) throw NodeLockUnusable(std::string("pthread_mutex_lock: ") + std::strerror(error));
    const pid_t thread = holder();
    const auto now = Clock::now();
    // A stopped holder stops every waiter with it (a client's heartbeat
    // thread stopped by SIGSTOP inside its critical section hung the next
    // client for ever: tests/faults, AStoppedHolderIsNamedOnce...).
    if (thread != 0 && processStopped(thread)) {
      if (!stoppedSince) stoppedSince = now;
    } else {
      stoppedSince.reset();
    }
    const pid_t process = processOfThread(thread);
    if (stoppedSince && now - *stoppedSince >= wait.stoppedHolder)
      throw NodeLockHeld(
          fmt::format("process {} is stopped holding the node's lock (kill -CONT {} resumes it)", process, process));
    if (now - start >= wait.anyHolder)
      throw NodeLockHeld(fmt::format("process {} (thread {}) has held the node's lock for {} ms", process, thread,
                                     std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()));
  }
}

bool RobustMutex::tryLock() {
  const int error = pthread_mutex_trylock(&mutex_);
  if (error == EOWNERDEAD) {
    pthread_mutex_consistent(&mutex_);
    return true;
  }
  return error == 0;
}

int RobustMutex::lockOrError(std::chrono::nanoseconds timeout) {
  timespec until{};
  clock_gettime(CLOCK_REALTIME, &until);
  const auto nanos = std::chrono::nanoseconds(until.tv_nsec) + timeout;
  until.tv_sec += static_cast<time_t>(nanos.count() / 1'000'000'000);
  until.tv_nsec = static_cast<long>(nanos.count() % 1'000'000'000);
  return pthread_mutex_timedlock(&mutex_, &until);
}

RobustMutex::TimedLock RobustMutex::lockWithin(std::chrono::nanoseconds timeout) {
  const int error = lockOrError(timeout);
  if (error == 0) return TimedLock::Taken;
  if (error == EOWNERDEAD) {
    log(LogLevel::Warn, "a process died holding the node lock; recovering it");
    pthread_mutex_consistent(&mutex_);
    return TimedLock::TakenFromDeadOwner;
  }
  if (error == ETIMEDOUT) return TimedLock::TimedOut;
  return TimedLock::Unusable; // EINVAL, ENOTRECOVERABLE, EDEADLK: not a mutex we can use
}

pid_t RobustMutex::holder() const {
  // glibc keeps the owner's thread id in __owner; a robust mutex's futex word
  // carries it too, with flag bits above FUTEX_TID_MASK.
  return static_cast<pid_t>(mutex_.__data.__owner & 0x3fffffff);
}

void RobustMutex::unlock() { pthread_mutex_unlock(&mutex_); }

} // namespace mqx::ipc
