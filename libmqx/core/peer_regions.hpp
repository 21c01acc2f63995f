// PeerRegions: what a memory manager sees of the other processes that share
// its device budget (multi-process mode, docs/daemon.md): a node-wide
// logical clock, the swappable regions of every process with the inputs of
// the replacement policy, and the owner's eviction of one of them on
// request. Paper §6: the victim is chosen among the regions of every query,
// not only the requester's. Single-process managers have none.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/region.hpp"
#include "policy/replacement_policy.hpp"

namespace mqx {

// A region's policy inputs, as its owner publishes them.
struct PublishedInputs {
  RegionId region = 0;
  EvictionCandidate inputs; // inputs.id is unused
};

// A region of another process, as last published by its owner.
struct PeerCandidate {
  std::uint32_t owner = 0; // opaque to the core
  RegionId region = 0;
  EvictionCandidate inputs; // inputs.id is left for the caller
};

// What asking the other processes for memory came to (docs/daemon.md,
// "Queue or evict, never abort").
enum class PeerReclaim {
  Freed,           // some bytes were freed, or the node has room now: retry the budget
  MustYield,       // an older process waits for memory too: give back what this operation backed, let it go first
  NobodyElseHolds, // no other live process holds any of the budget: waiting cannot help
  NoProgress,      // the others hold it, but nothing on the node progressed for the stall limit
};

// How long a wait for other processes goes on without any progress on the
// node before it gives up: 4 x daemon.eviction_timeout_ms. The wait itself is
// not bounded: it lasts as long as the others make progress (their launches,
// evictions, budgets, arrivals and departures: PeerRegions::progress).
inline std::chrono::milliseconds stallLimit(std::uint64_t evictionTimeoutMilliseconds) {
  return std::chrono::milliseconds(4 * evictionTimeoutMilliseconds);
}

// Watches a fingerprint of the node's progress during one wait.
class ProgressWatch {
public:
  using Clock = std::chrono::steady_clock;
  ProgressWatch(std::chrono::milliseconds limit, std::uint64_t fingerprint)
      : limit_(limit), last_(fingerprint), since_(Clock::now()) {}
  // Notes `fingerprint`; true once it has not changed for the limit.
  bool stalled(std::uint64_t fingerprint) {
    const auto now = Clock::now();
    if (fingerprint != last_) {
      last_ = fingerprint;
      since_ = now;
      return false;
    }
    return now - since_ >= limit_;
  }

private:
  std::chrono::milliseconds limit_;
  std::uint64_t last_;
  Clock::time_point since_;
};

class PeerRegions {
public:
  virtual ~PeerRegions() = default;
  // The node-wide logical clock: one tick per launch of any process.
  virtual std::uint64_t tick() = 0;
  // Owner side (called with the manager's lock held): the regions' policy
  // inputs changed; residentBytes 0 withdraws one. All regions of a launch
  // in one call: the owner's checks are paid once per launch, not per region
  // (bench/daemon).
  virtual void publish(std::span<const PublishedInputs> regions) = 0;
  // The published regions of the other live processes (may be stale).
  virtual void collect(std::vector<PeerCandidate>* out) = 0;
  // Asks the owner to evict `candidate` (or, when it is no longer
  // evictable, its own best alternative) and waits for the answer, at most
  // daemon.eviction_timeout_ms. The bytes freed; 0 on refusal or timeout.
  virtual std::size_t evictAt(const PeerCandidate& candidate, std::size_t bytes) = 0;

  // The device bytes one launch references (the query's demand as it runs,
  // paper §5); the node side rate-limits what it reports.
  virtual void observeLaunchFootprint(std::size_t bytes) = 0;

  // Deadlock avoidance between launches that each cannot complete their
  // backing (docs/daemon.md): whether a process of older arrival is also
  // waiting for memory, so that this one must give back what it backed for
  // its launch and let that one proceed (the manager waits, evicting for it,
  // until this turns false).
  virtual bool mustYield() = 0;

  // Nothing of this process is evictable and no published region was freed:
  // asks the other processes for anything and waits, as long as the node
  // makes progress, until some bytes are freed (docs/daemon.md).
  virtual PeerReclaim reclaim(std::size_t bytes) = 0;
  // A fingerprint of what the other processes do: it changes whenever one of
  // them launches, evicts, takes or gives back budget, arrives or leaves.
  virtual std::uint64_t progress() = 0;
  // One line for the log of a long wait: who holds the node's budget and
  // who waits for memory.
  virtual std::string describeNode() = 0;
};

} // namespace mqx
