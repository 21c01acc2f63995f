// RANDOM: a uniformly chosen victim, seeded for reproducible runs.
#include <random>

#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

class RandomPolicy final : public ReplacementPolicy {
public:
  explicit RandomPolicy(std::uint64_t seed) : engine_(seed) {}
  std::string_view name() const override { return "random"; }
  std::size_t chooseVictim(std::span<const EvictionCandidate> candidates) override {
    std::uniform_int_distribution<std::size_t> pick(0, candidates.size() - 1);
    return pick(engine_);
  }

private:
  std::mt19937_64 engine_;
};

} // namespace

std::unique_ptr<ReplacementPolicy> makeRandomPolicy(std::uint64_t seed) { return std::make_unique<RandomPolicy>(seed); }

} // namespace mqx
