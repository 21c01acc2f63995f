// The host-memory entry points of libmqx: the SIGSEGV handler that serves
// copy-on-write faults, and free/realloc/munmap, which must save pending lazy
// copies before a protected buffer goes away (paper §6: "mprotect does not
// capture the event when a memory region is freed"). One manager per process
// is registered with them.
#pragma once

#include <cstddef>
#include <memory>

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

// The registered manager, held as a hook call holds it: unregistering waits
// until every holder has gone. For tests of that wait.
class ManagerUse;
class HeldHostMemoryManager {
public:
  HeldHostMemoryManager();
  ~HeldHostMemoryManager();
  HeldHostMemoryManager(const HeldHostMemoryManager&) = delete;
  HeldHostMemoryManager& operator=(const HeldHostMemoryManager&) = delete;
  [[nodiscard]] MemoryManager* manager() const;

private:
  std::unique_ptr<ManagerUse> use_;
};

} // namespace mqx::hook
