#include "hook/host_memory_hooks.hpp"

#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

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

// Hook calls that may be using the registered manager, counted so that
// unregistering it waits for them before its owner destroys it: a thread
// that read the pointer and was preempted before using it would otherwise
// read a destroyed manager (BadInputTest.AllocationLargerThanTheDevice...
// hung in ctest so: a sim stream's worker freeing a task's captures looped
// in the destroyed copy-on-write tracker's map, holding its stream's lock).
// Sharded by thread so that frees on different threads share no cache line.
struct alignas(64) UserCount {
  std::atomic<std::uint32_t> count{0};
};
std::array<UserCount, 64> users;

// The calling thread's shard, from where its stack lies (threads' stacks are
// megabytes apart): no thread-local storage, which free() may reach before
// a dlopen'ed library's exists, and no system call.
std::size_t threadShard() {
  const int probe = 0;
  const auto granule = reinterpret_cast<std::uintptr_t>(&probe) >> 21; // 2 MiB
  return static_cast<std::size_t>((granule * 0x9E3779B97F4A7C15ull) >> 58) % users.size();
}

} // namespace

ManagerUse::ManagerUse() : shard_(threadShard()) {
  users[shard_].count.fetch_add(1, std::memory_order_seq_cst);
  manager_ = registered.load(std::memory_order_seq_cst);
}

ManagerUse::~ManagerUse() { users[shard_].count.fetch_sub(1, std::memory_order_release); }

namespace {

// Waits, after unregistering, until no hook call still uses the manager it
// read before. Such a call is short (a lookup, at most saving a lazy copy's
// source), so the bound is generous; past it the owner is told, not held.
void waitForUsers() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::uint64_t inside = 0;
    for (const UserCount& user : users)
      inside += user.count.load(std::memory_order_seq_cst);
    if (inside == 0) return;
    if (std::chrono::steady_clock::now() > deadline) {
      char line[160];
      const int length = snprintf(line, sizeof line,
                                  "mqx[%d]: %llu host-memory hook calls still use an unregistered manager after 10 s\n",
                                  static_cast<int>(getpid()), static_cast<unsigned long long>(inside));
      if (length > 0) (void)!write(STDERR_FILENO, line, static_cast<std::size_t>(length));
      return;
    }
    std::this_thread::yield();
  }
}

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
  if (registered.load(std::memory_order_acquire) != nullptr && info->si_code == SEGV_ACCERR) {
    ManagerUse use;
    if (MemoryManager* manager = use.manager();
        manager != nullptr && manager->hasProtectedHostMemory() && manager->onHostWriteFault(info->si_addr))
      return; // the page is writable now: the access is retried
  }
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

} // namespace

// Tells the manager that [address, address + bytes) goes away, if that
// memory is protected: threads freeing other memory never wait for the
// manager's lock. Without a manager, one load and nothing counted.
__attribute__((visibility("hidden"))) void releasingHostMemory(void* address, std::size_t bytes) {
  if (registered.load(std::memory_order_acquire) == nullptr) return;
  ManagerUse use;
  if (MemoryManager* manager = use.manager(); manager != nullptr && manager->isProtectedHostRange(address, bytes))
    manager->onHostRelease(address, bytes);
}

__attribute__((visibility("hidden"))) void registerHostMemoryManager(MemoryManager* manager) {
  if (manager != nullptr) std::call_once(installed, install);
  registered.store(manager, std::memory_order_seq_cst);
  if (manager == nullptr) waitForUsers();
}

} // namespace mqx::hook

extern "C" {

__attribute__((visibility("default"))) void free(void* pointer) {
  if (pointer != nullptr) mqx::hook::releasingHostMemory(pointer, malloc_usable_size(pointer));
  __libc_free(pointer);
}

__attribute__((visibility("default"))) void* realloc(void* pointer, size_t bytes) {
  if (pointer != nullptr) mqx::hook::releasingHostMemory(pointer, malloc_usable_size(pointer));
  return __libc_realloc(pointer, bytes);
}

__attribute__((visibility("default"))) int munmap(void* address, size_t bytes) {
  mqx::hook::releasingHostMemory(address, bytes);
  return static_cast<int>(::syscall(SYS_munmap, address, bytes));
}

} // extern "C"
