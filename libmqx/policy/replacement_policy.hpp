// ReplacementPolicy: chooses which swappable unit (a region, or a page with
// page-granular eviction) to evict (docs/architecture.md decision 8). Policy only:
// the mechanism (write-back, unmap) is the ResidencyManager's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "config/config_choices.hpp"

namespace mqx {

struct EvictionCandidate {
  std::uint64_t id = 0;       // opaque to the policy
  std::size_t bytes = 0;      // s: device memory the eviction frees
  std::size_t dirtyBytes = 0; // e: bytes that must be written back first
  std::uint64_t lastUse = 0;  // logical time of the last launch that used it
  std::uint64_t useCount = 0; // launches that used it
  // Logical time of the launch that used it before the last one (0: none
  // known): lastUse - previousUse is its last reuse interval.
  std::uint64_t previousUse = 0;
};

class ReplacementPolicy {
public:
  virtual ~ReplacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // Index into `candidates` (never empty) of the victim.
  virtual std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) = 0;
};

std::unique_ptr<ReplacementPolicy> makeCdrPolicy(double latencyFactor);
std::unique_ptr<ReplacementPolicy> makeLruPolicy();
std::unique_ptr<ReplacementPolicy> makeMruPolicy();
std::unique_ptr<ReplacementPolicy> makeLfuPolicy();
std::unique_ptr<ReplacementPolicy> makeRandomPolicy(std::uint64_t seed);
// `base`, switching to MRU while the references form a scan larger than the
// device (scan_resistant_policy.cpp): policy.replacement = "adaptive" wraps CDR.
std::unique_ptr<ReplacementPolicy> makeScanResistantPolicy(std::unique_ptr<ReplacementPolicy> base);
// CDR's cost with its reuse term ranked by the predicted next use (last use
// plus last reuse interval) instead of the last use (reuse_policy.cpp):
// policy.replacement = "reuse".
std::unique_ptr<ReplacementPolicy> makeReusePolicy(double latencyFactor);

// Which policy to make, with its parameters (policy.* in configs/default.toml,
// whose defaults these are).
struct PolicyOptions {
  ReplacementKind replacement = ReplacementKind::Cdr;
  double latencyFactor = 0.01;  // CDR's f in c = e + f*s*l (cdr_policy.cpp)
  std::uint64_t randomSeed = 0; // of the random policy
};

std::unique_ptr<ReplacementPolicy> makeReplacementPolicy(const PolicyOptions& options);

// Index of the least recently used candidate (ties: the first).
std::size_t leastRecentlyUsed(std::span<const EvictionCandidate> candidates);

// CDR's choice (paper §4.2, Formula 1) over the candidates ranked by
// `order` (indices into `candidates`, the most evictable first, l = 1/n):
// the lowest c = e + f·s·l, ties to the one earlier in the order.
std::size_t lowestCost(std::span<const EvictionCandidate> candidates, std::span<const std::size_t> order,
                       double latencyFactor);

} // namespace mqx
