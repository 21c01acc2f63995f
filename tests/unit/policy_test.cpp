// Each policy's choice pinned on hand-built situations, including the
// paper's reasoning about CDR's e term (§4.2).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

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

// A device of `capacity` equal, dirty units under `policy`: the misses of
// the reference string (each a load, and a write-back once full), as the
// residency manager would ask the policy (every resident unit a candidate).
// A unit's uses are remembered while it is evicted, as a Region's are.
std::size_t misses(ReplacementPolicy& policy, std::size_t capacity, const std::vector<std::uint64_t>& references) {
  struct Uses {
    std::uint64_t lastUse = 0, useCount = 0, previousUse = 0;
  };
  std::map<std::uint64_t, Uses> uses;
  std::vector<std::uint64_t> resident;
  std::size_t count = 0;
  std::uint64_t now = 0;
  for (std::uint64_t id : references) {
    ++now;
    if (std::find(resident.begin(), resident.end(), id) == resident.end()) {
      ++count;
      if (resident.size() == capacity) {
        std::vector<EvictionCandidate> list;
        for (std::uint64_t unit : resident) {
          const Uses& used = uses[unit];
          list.push_back({unit, MiB, MiB, used.lastUse, used.useCount, used.previousUse});
        }
        resident.erase(resident.begin() + static_cast<std::ptrdiff_t>(policy.chooseVictim(list)));
      }
      resident.push_back(id);
    }
    Uses& used = uses[id];
    used.previousUse = used.lastUse;
    used.lastUse = now;
    ++used.useCount;
  }
  return count;
}

std::vector<std::uint64_t> cyclicScan(std::uint64_t units, std::size_t passes) {
  std::vector<std::uint64_t> references;
  for (std::size_t pass = 0; pass < passes; ++pass)
    for (std::uint64_t unit = 0; unit < units; ++unit)
      references.push_back(unit);
  return references;
}

// 80% of the references to a hot fifth of the units (bench/peers's random
// reuse), seeded.
std::vector<std::uint64_t> hotSetReuse(std::uint64_t units, std::size_t count, unsigned seed) {
  std::mt19937 random(seed);
  const std::uint64_t hot = units / 5;
  std::vector<std::uint64_t> references;
  for (std::size_t i = 0; i < count; ++i)
    references.push_back(random() % 5 != 0 ? random() % hot : hot + random() % (units - hot));
  return references;
}

// The misses of CDR, MRU and the adaptive policy on the same references over
// 100 slots.
struct ThreePolicies {
  std::size_t cdr, mru, adaptive;
};
ThreePolicies missesOfEach(const std::vector<std::uint64_t>& references) {
  auto cdr = makeCdrPolicy(0.01);
  auto mru = makeMruPolicy();
  auto adaptive = makeReplacementPolicy(PolicyOptions{ReplacementKind::Adaptive, 0.01, 0});
  return {misses(*cdr, 100, references), misses(*mru, 100, references), misses(*adaptive, 100, references)};
}

TEST(AdaptivePolicy, ResistsScansLargerThanTheDevice) {
  // 130 and 200 units over 100 slots, 20 passes: recency orders miss every
  // reference after the first pass; MRU keeps most of the cycle.
  for (const std::uint64_t units : {130U, 200U}) {
    const auto references = cyclicScan(units, 20);
    const auto [byCdr, byMru, byAdaptive] = missesOfEach(references);
    EXPECT_EQ(byCdr, references.size());
    EXPECT_LT(byAdaptive, byMru * 5 / 4) << units << " units: CDR " << byCdr << ", MRU " << byMru;
    EXPECT_LT(byAdaptive, byCdr * 2 / 3) << units << " units: CDR " << byCdr << ", MRU " << byMru;
  }
}

TEST(AdaptivePolicy, KeepsCdrsChoicesOnHotSetReuse) {
  // Where MRU throws the hot fifth out, the adaptive policy stays with CDR.
  for (const std::uint64_t units : {115U, 150U, 200U}) {
    const unsigned seed = 7 + static_cast<unsigned>(units);
    const auto [byCdr, byMru, byAdaptive] = missesOfEach(hotSetReuse(units, 20000, seed));
    EXPECT_LE(byAdaptive, byCdr * 11 / 10) << units << " units, seed " << seed << ": MRU " << byMru;
    EXPECT_LT(byAdaptive, byMru) << units << " units, seed " << seed << ": CDR " << byCdr;
  }
}

TEST(ReusePolicy, EvictsTheUnitDueLast) {
  // Unit 0 was used at 4 and 5 (due at 6), unit 1 at 1 and 9 (due at 17):
  // the reuse policy evicts unit 1, LRU unit 0. Unit 2 was used once, at 7:
  // it takes the mean interval, 4.5 (due at 11.5).
  std::vector<EvictionCandidate> list{{0, MiB, MiB, 5, 2, 4}, {1, MiB, MiB, 9, 2, 1}, {2, MiB, MiB, 7, 1, 0}};
  EXPECT_EQ(makeReusePolicy(0.01)->chooseVictim(list), 1U);
  EXPECT_EQ(makeLruPolicy()->chooseVictim(list), 0U);
  list[1].lastUse = 2; // used at 1 and 2: due at 3, before the others
  EXPECT_EQ(makeReusePolicy(0.01)->chooseVictim(list), 2U);
}

TEST(ReusePolicy, PrefersCleanUnitsAsCdrDoes) {
  // The e term is CDR's: a clean unit due soon goes before a dirty one due late.
  std::vector<EvictionCandidate> list{{0, 64 * MiB, 64 * MiB, 9, 2, 1}, {1, 64 * MiB, 0, 5, 2, 4}};
  EXPECT_EQ(makeReusePolicy(0.01)->chooseVictim(list), 1U);
}

TEST(ReusePolicy, KeepsMostOfACycleResident) {
  // On a cycle every interval is the cycle's length: the unit due last is
  // the one just used, as MRU has it; recency orders miss every reference.
  for (const std::uint64_t units : {130U, 200U}) {
    const auto references = cyclicScan(units, 20);
    auto reuse = makeReusePolicy(0.01);
    const auto byReuse = misses(*reuse, 100, references);
    const auto [byCdr, byMru, byAdaptive] = missesOfEach(references);
    EXPECT_LE(byReuse, byMru) << units << " units: CDR " << byCdr << ", adaptive " << byAdaptive;
    EXPECT_LT(byReuse, byCdr * 2 / 3) << units << " units: MRU " << byMru;
  }
}

TEST(ReusePolicy, KeepsTheHotSetAfterAFill) {
  // bench/peers's CUDA random pattern: every unit written once in order,
  // then four touches a unit, 80% of them to the first fifth. The fill
  // leaves the hot units least recently used; the adaptive policy reads
  // their return as a scan and turns to MRU. The reuse policy must not do
  // worse than CDR.
  for (const std::uint64_t units : {115U, 150U, 200U}) {
    const unsigned seed = 3 + static_cast<unsigned>(units);
    auto references = cyclicScan(units, 1);
    const auto touches = hotSetReuse(units, 4 * units, seed);
    references.insert(references.end(), touches.begin(), touches.end());
    auto reuse = makeReusePolicy(0.01);
    const auto byReuse = misses(*reuse, 100, references);
    const auto [byCdr, byMru, byAdaptive] = missesOfEach(references);
    EXPECT_LE(byReuse, byCdr) << units << " units, seed " << seed << ": MRU " << byMru << ", adaptive " << byAdaptive;
  }
}

TEST(ReusePolicy, AScanAfterRandomReuseEvictsWhatItRead) {
  // bench/peers's matrix job: steps that each read two random units and
  // write a third, then a checksum reading every unit in order. A recency
  // order evicts the units the checksum has yet to read; the reuse policy
  // evicts those it has read and misses little more than the units that
  // were not resident when it began.
  for (const std::uint64_t units : {115U, 150U}) {
    const unsigned seed = 11 + static_cast<unsigned>(units);
    std::mt19937 random(seed);
    auto references = cyclicScan(units, 1);
    for (int step = 0; step < 1000; ++step)
      for (int touch = 0; touch < 3; ++touch)
        references.push_back(random() % units);
    const auto before = references;
    const auto pass = cyclicScan(units, 1);
    references.insert(references.end(), pass.begin(), pass.end());
    auto cdr = makeCdrPolicy(0.01), cdrBefore = makeCdrPolicy(0.01);
    auto reuse = makeReusePolicy(0.01), reuseBefore = makeReusePolicy(0.01);
    const std::size_t passByCdr = misses(*cdr, 100, references) - misses(*cdrBefore, 100, before);
    const std::size_t passByReuse = misses(*reuse, 100, references) - misses(*reuseBefore, 100, before);
    EXPECT_LE(passByReuse, (units - 100) * 3 / 2) << units << " units, seed " << seed << ": CDR " << passByCdr;
    EXPECT_LT(passByReuse * 3 / 2, passByCdr) << units << " units, seed " << seed;
  }
}

TEST(PolicyFactory, FollowsTheConfiguration) {
  Config config;
  for (auto kind : {ReplacementKind::Cdr, ReplacementKind::Lru, ReplacementKind::Mru, ReplacementKind::Lfu,
                    ReplacementKind::Random, ReplacementKind::Adaptive, ReplacementKind::Reuse}) {
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
