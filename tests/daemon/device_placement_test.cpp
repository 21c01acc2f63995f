// DevicePlacement, the pure decision of which device each postponed query
// starts on (docs/daemon.md, "Several GPUs"): scenarios, a differential test
// against AdmissionPolicy::admit on one device, and seeded random nodes of
// several devices checked against the rules that define placement.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "device_placement.hpp"
#include "ipc/node_state.hpp"

namespace mqx::daemon {
namespace {

constexpr std::uint64_t MiB = 1 << 20;
constexpr std::uint32_t kAny = ipc::kAnyDevice;

AdmissionPolicy policy(AdmissionKind kind, unsigned fixN = 2) {
  AdmissionPolicy p;
  p.kind = kind;
  p.fixN = fixN;
  return p;
}

TEST(DevicePlacement, DemandPutsAQueryWhereTheMostRoomIsLeft) {
  DevicePlacement placement(policy(AdmissionKind::Weight), PlacementKind::Demand, {100 * MiB, 100 * MiB});
  // sim-0 runs 30 MiB, sim-1 10 MiB: 50 MiB leaves 20 there and 40 here.
  EXPECT_EQ(placement.admit({{7, 30 * MiB, 30 * MiB, 0}, {8, 10 * MiB, 10 * MiB, 1}}, {{1, 50 * MiB, 50 * MiB}}),
            (std::vector<Placed>{{1, 1}}));
  // Equal room: the lowest index; then the other one has more.
  EXPECT_EQ(placement.admit({}, {{1, 10 * MiB, 10 * MiB}, {2, 10 * MiB, 10 * MiB}, {3, 10 * MiB, 10 * MiB}}),
            (std::vector<Placed>{{1, 0}, {2, 1}, {3, 0}}));
  // Devices of different sizes: room is counted in bytes.
  DevicePlacement uneven(policy(AdmissionKind::Weight), PlacementKind::Demand, {40 * MiB, 100 * MiB});
  EXPECT_EQ(uneven.admit({}, {{1, 30 * MiB, 30 * MiB}, {2, 30 * MiB, 30 * MiB}}),
            (std::vector<Placed>{{1, 1}, {2, 1}}));
}

TEST(DevicePlacement, RoundRobinTakesTheDevicesInTurnAcrossPasses) {
  DevicePlacement placement(policy(AdmissionKind::Weight), PlacementKind::RoundRobin,
                            {100 * MiB, 100 * MiB, 100 * MiB});
  EXPECT_EQ(placement.admit({}, {{1, 90 * MiB, 90 * MiB}, {2, 1, 1}}), (std::vector<Placed>{{1, 0}, {2, 1}}));
  // The turn is kept between passes; a query pinned to a device takes none.
  EXPECT_EQ(placement.admit({}, {{3, 1, 1, 0}, {4, 1, 1}}), (std::vector<Placed>{{3, 0}, {4, 2}}));
  // Its device full: the query waits for it (blind to demand), and so do
  // the unplaced ones behind it; a query pinned elsewhere still starts.
  EXPECT_EQ(placement.admit({{9, 90 * MiB, 90 * MiB, 0}}, {{5, 20 * MiB, 20 * MiB}, {6, 1, 1}, {7, 1, 1, 2}}),
            (std::vector<Placed>{{7, 2}}));
  EXPECT_EQ(placement.admit({}, {{5, 20 * MiB, 20 * MiB}, {6, 1, 1}}), (std::vector<Placed>{{5, 0}, {6, 1}}));
}

TEST(DevicePlacement, APinnedQueryGoesToItsDeviceAndWaitsOnlyForIt) {
  DevicePlacement placement(policy(AdmissionKind::Weight), PlacementKind::Demand, {100 * MiB, 100 * MiB});
  const std::vector<QueryDemand> running = {{9, 80 * MiB, 80 * MiB, 1}};
  // 1 asks for sim-1, which is full: it waits; 2 may run anywhere and starts
  // on sim-0; 3 asks for sim-1 and waits behind 1 however small.
  EXPECT_EQ(placement.admit(running, {{1, 30 * MiB, 30 * MiB, 1}, {2, 30 * MiB, 30 * MiB}, {3, 1, 1, 1}}),
            (std::vector<Placed>{{2, 0}}));
  // Demand would choose sim-0 (empty) for a query pinned to sim-1.
  EXPECT_EQ(placement.admit({}, {{4, 1, 1, 1}}), (std::vector<Placed>{{4, 1}}));
  // A device the node lacks: never placed, and nobody waits behind it.
  EXPECT_EQ(placement.admit({}, {{5, 1, 1, 2}, {6, 1, 1}}), (std::vector<Placed>{{6, 0}}));
}

TEST(DevicePlacement, AnUnplacedQueryThatFitsNowhereKeepsLaterOnesOffEveryDevice) {
  DevicePlacement placement(policy(AdmissionKind::Weight), PlacementKind::Demand, {100 * MiB, 100 * MiB});
  const std::vector<QueryDemand> running = {{8, 60 * MiB, 60 * MiB, 0}, {9, 60 * MiB, 60 * MiB, 1}};
  EXPECT_TRUE(placement.admit(running, {{1, 50 * MiB, 50 * MiB}, {2, 1, 1}}).empty());
  // An oversized query starts on an idle device (alone), and there only.
  EXPECT_EQ(placement.admit({{9, 60 * MiB, 60 * MiB, 1}}, {{1, 300 * MiB, 300 * MiB}, {2, 1, 1}}),
            (std::vector<Placed>{{1, 0}, {2, 1}}));
}

TEST(DevicePlacement, FixAndPeakArePerDevice) {
  DevicePlacement fix(policy(AdmissionKind::Fix, 1), PlacementKind::Demand, {100 * MiB, 100 * MiB});
  EXPECT_EQ(fix.admit({}, {{1, 1, 1}, {2, 1, 1}, {3, 1, 1}}), (std::vector<Placed>{{1, 0}, {2, 1}}));
  DevicePlacement peak(policy(AdmissionKind::Peak), PlacementKind::Demand, {100 * MiB, 100 * MiB});
  // Weighted demands would both fit on sim-0; peaks send the second to sim-1.
  EXPECT_EQ(peak.admit({}, {{1, 10 * MiB, 60 * MiB}, {2, 10 * MiB, 60 * MiB}}), (std::vector<Placed>{{1, 0}, {2, 1}}));
}

// A random node: devices, running queries and waiting ones in arrival order.
struct RandomCase {
  std::vector<std::uint64_t> capacities;
  std::vector<QueryDemand> running, waiting;
};

RandomCase randomCase(std::mt19937_64& random, std::uint32_t devices, bool pinned) {
  RandomCase c;
  for (std::uint32_t d = 0; d < devices; ++d)
    c.capacities.push_back((16 + random() % 112) * MiB);
  auto demand = [&] {
    const std::uint64_t weighted = (1 + random() % 80) * MiB;
    return std::pair{weighted, weighted + (random() % 40) * MiB};
  };
  std::uint32_t id = 0;
  for (std::uint64_t i = 0, n = random() % 6; i < n; ++i) {
    const auto [w, p] = demand();
    c.running.push_back({id++, w, p, static_cast<std::uint32_t>(random() % devices)});
  }
  for (std::uint64_t i = 0, n = 1 + random() % 8; i < n; ++i) {
    const auto [w, p] = demand();
    const bool pins = pinned && random() % 3 == 0;
    c.waiting.push_back({id++, w, p, pins ? static_cast<std::uint32_t>(random() % devices) : kAny});
  }
  return c;
}

TEST(DevicePlacement, OnOneDeviceItIsTheAdmissionPolicy) {
  // Differential: a node of one device places exactly what
  // AdmissionPolicy::admit admits, and on device 0.
  const std::uint64_t firstSeed = 1600;
  for (std::uint64_t seed = firstSeed; seed < firstSeed + 400; ++seed) {
    std::mt19937_64 random(seed);
    const auto kind = std::array{AdmissionKind::Weight, AdmissionKind::Peak, AdmissionKind::Fix}[seed % 3];
    const auto placementKind = seed % 2 == 0 ? PlacementKind::Demand : PlacementKind::RoundRobin;
    RandomCase c = randomCase(random, 1, seed % 5 == 0);
    AdmissionPolicy single = policy(kind, 1 + static_cast<unsigned>(random() % 3));
    DevicePlacement placement(single, placementKind, c.capacities);
    single.capacity = c.capacities[0];
    std::vector<Placed> expected;
    for (std::uint32_t id : single.admit(c.running, c.waiting))
      expected.push_back({id, 0});
    ASSERT_EQ(placement.admit(c.running, c.waiting), expected) << "seed " << seed;
  }
}

// The rules that define demand placement, checked on one decision: each
// placed query fits where it went, given what ran there and what was placed
// there before it; there it leaves the most room among the devices it could
// have used (the lowest index of equals); a query left waiting could use
// none of its devices; and no later query starts on a device an earlier
// waiting one could run on.
void checkDemandPlacement(const AdmissionPolicy& policy, const RandomCase& c, const std::vector<Placed>& placed,
                          std::uint64_t seed) {
  const std::uint32_t devices = static_cast<std::uint32_t>(c.capacities.size());
  std::vector<DeviceLoad> load(devices);
  for (const QueryDemand& query : c.running)
    load[query.device].add(policy, query);
  std::vector<bool> waitedFor(devices);
  std::size_t next = 0;
  for (const QueryDemand& query : c.waiting) {
    std::vector<std::uint32_t> usable;
    for (std::uint32_t d = 0; d < devices; ++d)
      if ((query.device == kAny || query.device == d) && !waitedFor[d] && policy.fits(load[d], query, c.capacities[d]))
        usable.push_back(d);
    const bool wasPlaced = next < placed.size() && placed[next].id == query.id;
    if (!wasPlaced) {
      EXPECT_TRUE(usable.empty()) << "seed " << seed << ": query " << query.id << " could have started";
      for (std::uint32_t d = 0; d < devices; ++d)
        if (query.device == kAny || query.device == d) waitedFor[d] = true;
      continue;
    }
    const std::uint32_t chosen = placed[next++].device;
    ASSERT_NE(std::find(usable.begin(), usable.end(), chosen), usable.end())
        << "seed " << seed << ": query " << query.id << " placed where it may not start";
    auto room = [&](std::uint32_t d) {
      return static_cast<long double>(c.capacities[d]) - load[d].demand - policy.demandOf(query);
    };
    for (std::uint32_t d : usable)
      EXPECT_TRUE(room(d) < room(chosen) || (room(d) == room(chosen) && d >= chosen))
          << "seed " << seed << ": query " << query.id << " on " << chosen << " but " << d << " leaves more room";
    load[chosen].add(policy, query);
  }
  EXPECT_EQ(next, placed.size()) << "seed " << seed << ": placed out of arrival order";
}

TEST(DevicePlacement, RandomNodesOfSeveralDevicesFollowTheRules) {
  const std::uint64_t firstSeed = 7100;
  for (std::uint64_t seed = firstSeed; seed < firstSeed + 600; ++seed) {
    std::mt19937_64 random(seed);
    const auto kind = std::array{AdmissionKind::Weight, AdmissionKind::Peak, AdmissionKind::Fix}[seed % 3];
    const AdmissionPolicy rules = policy(kind, 1 + static_cast<unsigned>(random() % 3));
    const RandomCase c = randomCase(random, 2 + static_cast<std::uint32_t>(random() % 3), true);
    DevicePlacement placement(rules, PlacementKind::Demand, c.capacities);
    checkDemandPlacement(rules, c, placement.admit(c.running, c.waiting), seed);
    if (HasFailure()) return;
  }
}

} // namespace
} // namespace mqx::daemon
