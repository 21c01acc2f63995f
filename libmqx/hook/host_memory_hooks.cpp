#include "hook/host_memory_hooks.hpp"

#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <mutex>

#include "core/memory_manager.hpp"

extern "C" {
void __libc_free(void*);
void* __libc_realloc(void*, size_t);
}

namespace mqx::hook {
namespace {

std::atomic<MemoryManager*> registered{nullptr};
struct sigaction previousHandler;
std::once_flag installed;

// Hands a fault we do not own to whoever handled SIGSEGV before us.
void chain(int signal, siginfo_t* info, void* context) {
  if ((previousHandler.sa_flags & SA_SIGINFO) != 0 && previousHandler.sa_sigaction != nullptr) {
    previousHandler.sa_sigaction(signal, info, context);
    return;
  }
  if (previousHandler.sa_handler == SIG_IGN) return;
  if (previousHandler.sa_handler != SIG_DFL && previousHandler.sa_handler != nullptr) {
    previousHandler.sa_handler(signal);
    return;
  }
  // Default action: restore it; returning re-runs the faulting access, which
  // now terminates the process as it would have without us. Say where first:
  // a program that dies under mqx must not die in silence (its own buffered
  // output is lost with it).
  char line[160];
  const int length = snprintf(line, sizeof line, "mqx[%d]: fatal SIGSEGV at %p (not a copy-on-write fault); stack:\n",
                              static_cast<int>(getpid()), info != nullptr ? info->si_addr : nullptr);
  if (length > 0) (void)!write(STDERR_FILENO, line, static_cast<std::size_t>(length));
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
  ::signal(SIGSEGV, SIG_DFL);
}

void onSegmentationFault(int signal, siginfo_t* info, void* context) {
  MemoryManager* manager = registered.load(std::memory_order_acquire);
  if (manager != nullptr && info->si_code == SEGV_ACCERR && manager->hasProtectedHostMemory() &&
      manager->onHostWriteFault(info->si_addr))
    return; // the page is writable now: the access is retried
  chain(signal, info, context);
}

void install() {
  void* warmUp[1];
  backtrace(warmUp, 1); // loads libgcc now, not inside the fault handler
  struct sigaction action {};
  action.sa_sigaction = onSegmentationFault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previousHandler);
}

// The manager to notify when [address, address + bytes) goes away: only if
// that memory is protected, so that threads freeing other memory never wait
// for the manager's lock.
MemoryManager* watching(const void* address, std::size_t bytes) {
  MemoryManager* manager = registered.load(std::memory_order_acquire);
  return manager != nullptr && manager->isProtectedHostRange(address, bytes) ? manager : nullptr;
}

} // namespace

__attribute__((visibility("hidden"))) void registerHostMemoryManager(MemoryManager* manager) {
  if (manager != nullptr) std::call_once(installed, install);
  registered.store(manager, std::memory_order_release);
}

} // namespace mqx::hook

extern "C" {

__attribute__((visibility("default"))) void free(void* pointer) {
  if (pointer != nullptr) {
    const std::size_t bytes = malloc_usable_size(pointer);
    if (auto* manager = mqx::hook::watching(pointer, bytes)) manager->onHostRelease(pointer, bytes);
  }
  __libc_free(pointer);
}

__attribute__((visibility("default"))) void* realloc(void* pointer, size_t bytes) {
  if (pointer != nullptr) {
    const std::size_t size = malloc_usable_size(pointer);
    if (auto* manager = mqx::hook::watching(pointer, size)) manager->onHostRelease(pointer, size);
  }
  return __libc_realloc(pointer, bytes);
}

__attribute__((visibility("default"))) int munmap(void* address, size_t bytes) {
  if (auto* manager = mqx::hook::watching(address, bytes)) manager->onHostRelease(address, bytes);
  return static_cast<int>(::syscall(SYS_munmap, address, bytes));
}

} // extern "C"
