// The host-memory entry points of libmqx: the SIGSEGV handler that serves
// copy-on-write faults, and free/realloc/munmap, which must save pending lazy
// copies before a protected buffer goes away (paper §6: "mprotect does not
// capture the event when a memory region is freed"). One manager per process
// is registered with them.
#pragma once

#include <cstddef>

namespace mqx {
class MemoryManager;
}

namespace mqx::hook {

// Registers `manager` (null to unregister) and installs the fault handler on
// first use. The previous SIGSEGV handler is chained for faults that are not
// ours. Unregistering waits (10 s at most) until no hook call on another
// thread still uses the manager it read before, so that its owner may
// destroy it on return. To replace a manager, unregister it first.
void registerHostMemoryManager(MemoryManager* manager);

// What free(), realloc() and munmap() do before the memory goes: tell the
// registered manager, if the range is protected copy-on-write.
void releasingHostMemory(void* address, std::size_t bytes);

// The registered manager, held for the scope as every hook call holds it:
// counted first, then read again, so that either unregistering sees the
// count or this sees null. Unregistering waits until every holder has gone.
class ManagerUse {
public:
  ManagerUse();
  ~ManagerUse();
  ManagerUse(const ManagerUse&) = delete;
  ManagerUse& operator=(const ManagerUse&) = delete;
  [[nodiscard]] MemoryManager* manager() const { return manager_; }

private:
  std::size_t shard_;
  MemoryManager* manager_ = nullptr;
};

} // namespace mqx::hook
