// The host-memory entry points of libmqx: the SIGSEGV handler that serves
// copy-on-write faults, and free/realloc/munmap, which must save pending lazy
// copies before a protected buffer goes away (paper §6: "mprotect does not
// capture the event when a memory region is freed"). One manager per process
// is registered with them.
#pragma once

namespace mqx {
class MemoryManager;
}

namespace mqx::hook {

// Registers `manager` (null to unregister) and installs the fault handler on
// first use. The previous SIGSEGV handler is chained for faults that are not
// ours.
void registerHostMemoryManager(MemoryManager* manager);

} // namespace mqx::hook
