// Per-process counters of the memory manager (issue: statistics). Plain
// integers: every update happens under the manager's lock.
#pragma once

#include <cstdint>
#include <string>

namespace mqx {

struct Statistics {
  std::uint64_t bytesToDevice = 0;          // host -> device transfers issued by mqx
  std::uint64_t bytesToHost = 0;            // device -> host transfers (write-backs and reads)
  std::uint64_t bytesOnDevice = 0;          // device -> device copies
  std::uint64_t bytesFilledOnDevice = 0;    // memsets materialised on the device
  std::uint64_t bytesRequestedToDevice = 0; // what the application asked to copy to the device
  std::uint64_t bytesAvoidedLazy = 0;       // lazily recorded bytes never transferred
  std::uint64_t bytesWrittenBack = 0;       // dirty bytes saved to the swap buffer on eviction
  std::uint64_t bytesDroppedClean = 0;      // clean bytes evicted without a transfer
  std::uint64_t evictions = 0;              // eviction decisions (regions or pages)
  std::uint64_t pagesEvicted = 0;
  std::uint64_t bytesCopiedOnHost = 0; // application data buffered into the swap buffer by the CPU
  std::uint64_t cowFaults = 0;         // write faults on protected copy sources
  std::uint64_t cowBytesSaved = 0;     // bytes copied to the swap buffer by faults and frees
  std::uint64_t launches = 0;
  std::uint64_t residencyWaitNanoseconds = 0; // time launches waited for backing and loads
  std::uint64_t fenceWaits = 0;               // times mqx waited for in-flight work to free memory
  std::uint64_t peerEvictions = 0; // victims chosen among other processes' regions and evicted by their owners
  std::uint64_t launchYields = 0;  // operations that gave back their backing to an older process (deadlock avoidance)
  std::uint64_t bytesEvictedWhileYielding = 0; // evicted for an older process while an operation yielded to it
  std::uint64_t bytesWrittenAhead = 0; // dirty bytes written back ahead of their eviction (policy.write_back_ahead)
  std::uint64_t bytesWrittenAheadStale = 0; // of those, bytes changed while their copy ran: the copy was dropped
  // Wall time spent inside evictions (write-backs, unmapping, mapping host
  // blocks): what an eviction costs, measured (docs/daemon.md, "Adaptive admission").
  std::uint64_t evictionNanoseconds = 0;
  // Of fenceWaits, those before remapping a page on its host block to device
  // memory (a launch needs it while in-flight work may reach it); the rest
  // waited for something to evict. And the time all of them waited: where
  // a drain's cost goes (issue 31).
  std::uint64_t fenceWaitsToRemap = 0;
  std::uint64_t fenceWaitNanoseconds = 0;
  // Evictions that refilled the spare page with their write-backs running
  // beside the loads of the page that took it (policy.spare_pages).
  std::uint64_t evictionsBesideLoads = 0;
  // Write-backs whose page left its device memory once its bytes were in
  // the staging memory, before they reached its host block
  // (policy.staged_write_back).
  std::uint64_t stagedWriteBacks = 0;
  // Gauges, set when the statistics are read (MemoryManager::statistics):
  // the host blocks the swap buffer holds, and of them those borrowed from
  // mqxd's pool (docs/daemon.md, "Lent host blocks"): whether a fill ran on
  // lent blocks shows in the exit line, which is written when a process's
  // objects are not destroyed.
  std::uint64_t swapBytesHeld = 0;
  std::uint64_t swapBytesBorrowed = 0;

  // One line of JSON, {"bytes_to_device":N,...}: every counter, keyed in snake_case.
  std::string toJson() const;
};

} // namespace mqx
