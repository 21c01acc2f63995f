// Each policy's choice pinned on hand-built situations, including the
// paper's reasoning about CDR's e term (§4.2).
#include <gtest/gtest.h>

#include <set>

#include "config/config.hpp"
#include "embedded/runtime_options.hpp"
#include "policy/replacement_policy.hpp"

namespace mqx {
namespace {

constexpr std::size_t MiB = 1 << 20;

EvictionCandidate candidate(std::uint64_t id, std::size_t bytes, std::size_t dirty, std::uint64_t lastUse,
                            std::uint64_t uses = 1) {
  return {id, bytes, dirty, lastUse, uses};
}

TEST(CdrPolicy, CleanRegionsCostNothingToEvict) {
  // A dirty cold region against a clean hot one: c_dirty = 64 MiB + f·64
  // MiB·(1/2), c_clean = 0 + f·64 MiB·1. CDR evicts the clean one although it
  // is hotter.
  auto cdr = makeCdrPolicy(0.01);
  std::vector<EvictionCandidate> list{candidate(0, 64 * MiB, 64 * MiB, 1), candidate(1, 64 * MiB, 0, 2)};
  EXPECT_EQ(cdr->chooseVictim(list), 1U);
  EXPECT_EQ(makeLruPolicy()->chooseVictim(list), 0U);
}

TEST(CdrPolicy, LatencyTermWeighsSizeAndRecency) {
  // All clean: cost = f·s·l. Small but recent vs large but cold:
  // s=8 MiB, l=1 -> 0.08 MiB; s=64 MiB, l=1/2 -> 0.32 MiB. The small one goes.
  auto cdr = makeCdrPolicy(0.01);
  std::vector<EvictionCandidate> list{candidate(0, 64 * MiB, 0, 1), candidate(1, 8 * MiB, 0, 2)};
  EXPECT_EQ(cdr->chooseVictim(list), 1U);
  // Three regions; l = 1/3, 2/3, 1 in LRU order; partial dirtiness decides.
  std::vector<EvictionCandidate> three{candidate(0, 32 * MiB, 1 * MiB, 5), candidate(1, 32 * MiB, 0, 9),
                                       candidate(2, 32 * MiB, 0, 7)};
  // c0 = 1 MiB + 0.01·32·(1/3) MiB, c2 = 0.01·32·(2/3) MiB, c1 = 0.01·32·1 MiB.
  EXPECT_EQ(cdr->chooseVictim(three), 2U);
}

TEST(CdrPolicy, LargeLatencyFactorTurnsIntoLruAmongCleanEqualSizes) {
  auto cdr = makeCdrPolicy(1.0);
  std::vector<EvictionCandidate> list{candidate(0, 8 * MiB, 0, 30), candidate(1, 8 * MiB, 0, 10),
                                      candidate(2, 8 * MiB, 0, 20)};
  EXPECT_EQ(cdr->chooseVictim(list), 1U);
}

TEST(CdrPolicy, TieGoesToTheLessRecentlyUsed) {
  // f = 0: cost is e alone; equal e -> the least recently used wins.
  auto cdr = makeCdrPolicy(0.0);
  std::vector<EvictionCandidate> list{candidate(0, 8 * MiB, 4 * MiB, 50), candidate(1, 16 * MiB, 4 * MiB, 20),
                                      candidate(2, 8 * MiB, 4 * MiB, 40)};
  EXPECT_EQ(cdr->chooseVictim(list), 1U);
}

TEST(OtherPolicies, ChooseByTheirRule) {
  std::vector<EvictionCandidate> list{candidate(0, MiB, 0, 30, 7), candidate(1, MiB, MiB, 10, 9),
                                      candidate(2, MiB, 0, 20, 2), candidate(3, MiB, 0, 40, 2)};
  EXPECT_EQ(makeLruPolicy()->chooseVictim(list), 1U);
  EXPECT_EQ(makeMruPolicy()->chooseVictim(list), 3U);
  EXPECT_EQ(makeLfuPolicy()->chooseVictim(list),
            2U); // fewest uses; tie -> less recent
}

TEST(RandomPolicy, IsSeededAndCoversAllCandidates) {
  std::vector<EvictionCandidate> list{candidate(0, MiB, 0, 1), candidate(1, MiB, 0, 2), candidate(2, MiB, 0, 3)};
  auto first = makeRandomPolicy(42);
  auto second = makeRandomPolicy(42);
  std::set<std::size_t> seen;
  for (int i = 0; i < 200; ++i) {
    std::size_t choice = first->chooseVictim(list);
    EXPECT_EQ(choice, second->chooseVictim(list));
    seen.insert(choice);
  }
  EXPECT_EQ(seen.size(), 3U);
}

TEST(PolicyFactory, FollowsTheConfiguration) {
  Config config;
  for (auto kind : {ReplacementKind::Cdr, ReplacementKind::Lru, ReplacementKind::Mru, ReplacementKind::Lfu,
                    ReplacementKind::Random}) {
    config.replacement = kind;
    EXPECT_EQ(makeReplacementPolicy(embedded::managerOptions(config).policy)->name(), toString(kind));
    EXPECT_EQ(makeReplacementPolicy(PolicyOptions{kind, 0.01, 0})->name(), toString(kind));
  }
}

TEST(PolicyFactory, PassesTheLatencyFactorOn) {
  // A large clean cold region against a small dirty hot one: with f = 0 only
  // e counts (the clean one goes); with f = 1 the reuse term f·s·l of the
  // large one (4 MiB·1/2) outweighs the small one's 64 KiB + 64 KiB·1.
  std::vector<EvictionCandidate> list{candidate(0, 4 * MiB, 0, 1), candidate(1, 64 * 1024, 64 * 1024, 2)};
  Config config;
  config.latencyFactor = 0;
  EXPECT_EQ(makeReplacementPolicy(embedded::managerOptions(config).policy)->chooseVictim(list), 0U);
  EXPECT_EQ(makeReplacementPolicy(PolicyOptions{ReplacementKind::Cdr, 0, 0})->chooseVictim(list), 0U);
  config.latencyFactor = 1;
  EXPECT_EQ(makeReplacementPolicy(embedded::managerOptions(config).policy)->chooseVictim(list), 1U);
  EXPECT_EQ(makeReplacementPolicy(PolicyOptions{ReplacementKind::Cdr, 1, 0})->chooseVictim(list), 1U);
}

TEST(PolicyFactory, PassesTheRandomSeedOn) {
  std::vector<EvictionCandidate> list;
  for (std::uint64_t id = 0; id < 16; ++id)
    list.push_back(candidate(id, MiB, 0, id));
  auto choices = [&](std::unique_ptr<ReplacementPolicy> policy) {
    std::vector<std::size_t> chosen;
    for (int i = 0; i < 32; ++i)
      chosen.push_back(policy->chooseVictim(list));
    return chosen;
  };
  Config config;
  config.replacement = ReplacementKind::Random;
  config.randomSeed = 7;
  const auto seven = choices(makeReplacementPolicy(PolicyOptions{ReplacementKind::Random, 0.01, 7}));
  EXPECT_EQ(choices(makeReplacementPolicy(embedded::managerOptions(config).policy)), seven);
  EXPECT_NE(choices(makeReplacementPolicy(PolicyOptions{ReplacementKind::Random, 0.01, 8})), seven);
}

} // namespace
} // namespace mqx
