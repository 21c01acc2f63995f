// RobustMutex: a process-shared pthread mutex that lives in shared memory and
// survives its holder's death (PTHREAD_MUTEX_ROBUST). Boost 1.74's
// interprocess_mutex is not robust: a client killed with SIGKILL inside a
// critical section would hang every other process for ever (docs/architecture.md
// decision 9). Here the next locker gets EOWNERDEAD, repairs, and goes on.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <stdexcept>

namespace mqx::ipc {

// The mutex is not one (EINVAL, ENOTRECOVERABLE: the segment holding it was
// written over): whoever holds the segment must leave it (docs/hardening.md,
// "A damaged node is a node lost").
struct NodeLockUnusable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The mutex works, but its holder keeps it past LockWait's bound: it is
// stopped (SIGSTOP, a tracer) or hung inside a critical section of a few
// microseconds. Its what() is the whole reason, naming the holder and the
// command that resumes it. Whoever waited leaves the node as for a damaged
// one (docs/hardening.md, "A stopped holder" in its table of faults).
struct NodeLockHeld : NodeLockUnusable {
  using NodeLockUnusable::NodeLockUnusable;
};

// How long lock() waits for another holder. Every critical section on the
// node is a few loads and stores, so a holder that keeps the lock for a
// second while stopped, or for ten seconds at all, will not give it back
// soon: the waiter must not hang its host program for it.
struct LockWait {
  std::chrono::milliseconds stoppedHolder{1000};
  std::chrono::milliseconds anyHolder{10000};
};

class RobustMutex {
public:
  // Placement-constructed once by the segment's creator.
  RobustMutex();
  ~RobustMutex();
  RobustMutex(const RobustMutex&) = delete;
  RobustMutex& operator=(const RobustMutex&) = delete;

  // Returns true when the previous holder died holding it; the protected
  // state is then marked consistent again (callers keep their state valid
  // after every single store, so there is nothing else to repair). Throws
  // NodeLockHeld past `wait`, NodeLockUnusable when it is no mutex.
  bool lock(const LockWait& wait = {});
  // True when taken (a dead holder's lock is taken and made consistent).
  bool tryLock();
  // Waits at most `timeout` (docs/hardening.md: a damaged segment or a
  // stopped holder must not block mqxd for ever).
  enum class TimedLock { Taken, TakenFromDeadOwner, TimedOut, Unusable };
  TimedLock lockWithin(std::chrono::nanoseconds timeout);
  void unlock();
  // The thread id that holds it now, 0 when none (glibc's owner field;
  // for messages only).
  pid_t holder() const;

private:
  // pthread_mutex_timedlock's result after at most `timeout`.
  int lockOrError(std::chrono::nanoseconds timeout);

  pthread_mutex_t mutex_;
};

class RobustLock {
public:
  explicit RobustLock(RobustMutex& mutex) : mutex_(mutex) { ownerDied_ = mutex_.lock(); }
  // For a mutex the caller has just locked (RobustMutex::lockWithin).
  RobustLock(RobustMutex& mutex, std::adopt_lock_t, bool ownerDied) : mutex_(mutex), ownerDied_(ownerDied) {}
  ~RobustLock() { mutex_.unlock(); }
  RobustLock(const RobustLock&) = delete;
  RobustLock& operator=(const RobustLock&) = delete;
  bool ownerDied() const { return ownerDied_; }

private:
  RobustMutex& mutex_;
  bool ownerDied_ = false;
};

} // namespace mqx::ipc
