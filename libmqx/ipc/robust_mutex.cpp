#include "ipc/robust_mutex.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/log.hpp"

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

bool RobustMutex::lock() {
  const int error = pthread_mutex_lock(&mutex_);
  if (error == EOWNERDEAD) {
    log(LogLevel::Warn, "a process died holding the node lock; recovering it");
    pthread_mutex_consistent(&mutex_);
    return true;
  }
  if (error != 0) throw std::runtime_error(std::string("pthread_mutex_lock: ") + std::strerror(error));
  return false;
}

bool RobustMutex::tryLock() {
  const int error = pthread_mutex_trylock(&mutex_);
  if (error == EOWNERDEAD) {
    pthread_mutex_consistent(&mutex_);
    return true;
  }
  return error == 0;
}

void RobustMutex::unlock() { pthread_mutex_unlock(&mutex_); }

} // namespace mqx::ipc
