// The memory manager's options, one struct for each part it assembles, with
// the defaults of configs/default.toml. A runtime builds them from the
// configuration where it is assembled (embedded/runtime_options.hpp,
// managerOptions); nothing in the core sees the whole Config (STYLE.md
// section 3).
#pragma once

#include <cstddef>
#include <string>

#include "config/config_choices.hpp"
#include "policy/replacement_policy.hpp"

namespace mqx {

// How a launch's references are found (optimizations.*).
struct ReferenceOptions {
  ReferenceDetection detection = ReferenceDetection::Auto; // reference_detection
  bool accessAdvice = true;          // access_advice; off: every reference reads and writes (the paper's NoAccess)
  bool pointersInParameters = false; // pointers_in_parameters: a parameter scan finds every reference
};

// How residency evicts and waits for the other processes of the node.
struct ResidencyOptions {
  EvictionGranularity evictionGranularity = EvictionGranularity::Region; // policy.eviction_granularity
  // daemon.eviction_timeout_ms: how long a wait for the other processes goes
  // on without progress (stallLimit), and (times 4) how long a launch waits
  // for them before it runs from its host blocks.
  unsigned evictionTimeoutMilliseconds = 2000;
  // policy.write_back_ahead: under eviction pressure, dirty pages that are
  // next in line to be evicted are written back on the copy engine while
  // the device computes, up to this fraction of the budget (at least a
  // page; 0: off), so that their eviction moves no data
  // (residency_write_ahead.cpp).
  double writeBackAheadFraction = 0.02;
  // policy.write_back_ahead_quiet_operations: operations (launches, copies,
  // memsets) that must follow the last launch of unknown references before
  // anything is written ahead again: such a launch voids every write ahead
  // in flight (residency_write_ahead.cpp).
  std::uint32_t writeBackAheadQuietOperations = 64;
  // policy.spare_pages: once the budget is full, this many pages of it are
  // kept spare (0: none); a page that must be backed takes one at once, and
  // the victims that refill them are written back while the page loads, on
  // the other copy engine, instead of before (ResidencyManager::refillSpare).
  unsigned sparePages = 1;
  // policy.staged_write_back: while spare pages are kept, one more page of
  // the budget is staging memory; a dirty victim's bytes are copied there on
  // the device and its host block is mapped under it at once, while the copy
  // to that block runs (ResidencyManager::evict; docs/architecture.md, "The
  // staged write-back"). Off: the host block is mapped once the write-back
  // is done.
  bool stagedWriteBack = true;
};

// The process's trace (trace.*): Chrome trace-event JSON.
struct TraceOptions {
  std::string file;                 // "": off; "%p" becomes the pid
  std::size_t bufferEvents = 16384; // events kept in memory before they are written
};

struct ManagerOptions {
  // [memory]
  std::size_t pageSize = 64 * 1024 * 1024; // rounded up to the device's granularity
  // The private budget, when the manager is given no shared one; 0: what
  // the device has.
  std::size_t deviceMemoryLimit = 0;
  std::size_t swapBufferLimit = 0; // 0: half of the host's physical memory
  bool pinnedSwap = true;
  // memory.borrow_host_blocks: on a node whose mqxd keeps a pool of host
  // blocks (daemon.host_block_pool), take them from it before creating any.
  bool borrowHostBlocks = true;
  // memory.reported_oversubscription: cuMemGetInfo (memoryInfo) reports a
  // device of the budget times this, at most the budget and the swap buffer
  // together (what allocations may reach), so that a program that sizes its
  // own pool from the device (JAX takes 75% of it) can go beyond the budget.
  // 1: the budget itself.
  double reportedOversubscription = 1.0;
  // [optimizations]
  bool lazyTransfer = true;
  bool copyOnWrite = true;
  std::size_t cowMinBytes = 256 * 1024; // smaller host buffers are copied at once, never write-protected
  bool pageCoherence = true;            // off: one page per region (the paper's NoPage)
  ReferenceOptions references;
  ResidencyOptions residency;
  PolicyOptions policy;
  TraceOptions trace;
};

} // namespace mqx
