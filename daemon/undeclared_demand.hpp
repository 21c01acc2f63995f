// UndeclaredDemand: what admission counts for a query that declares nothing
// and whose name mqxd has not learned yet (docs/daemon.md, "Queries that
// declare nothing").
//
// Why not 0: a query's demand is its working set (Denning), and admission's
// memory check is only as good as that figure. Counted as 0 until its
// processes hold memory, every undeclared query fits at arrival, so N jobs of
// 0.55x a device that arrive together all start and thrash: on two H100s
// (bench/results/gpu-jobs-H100x2-8355fec.txt) three of them shared one GPU,
// 215-234 s each against 7 s alone. So an unknown working set counts as the
// whole device until it is measured, and a running query is measured once
// what its processes hold has stopped growing for `settleSeconds` (the most
// it held is then its demand). A waiting query of the same name as a
// measured running one is estimated by that one (jobs of one program are
// alike); a finished one's peak is learned under its name (DemandHistory).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ipc/node_state.hpp"

namespace mqx::daemon {

struct UndeclaredOptions {
  double settleSeconds = 2.0; // no growth for this long: the working set is measured
  // A query that has held nothing for this long is measured at what it holds
  // (a program that does not use the device must not keep it to itself).
  double idleSeconds = 10.0;
};

class UndeclaredDemand {
public:
  explicit UndeclaredDemand(const UndeclaredOptions& options) : options_(options) {}

  // The query in `slot` starts with nothing declared or learned: measured from `now`.
  void started(std::uint32_t slot, const std::string& name, double now);
  // Its record was freed or it declared a demand: no longer measured here.
  void ended(std::uint32_t slot);
  // Every liveness pass: what its processes hold now on its device.
  void observe(std::uint32_t slot, std::uint64_t held, double now);

  [[nodiscard]] bool measuring(std::uint32_t slot) const { return slots_[slot].active; }
  [[nodiscard]] bool settled(std::uint32_t slot, double now) const;
  // The demand admission counts for the running query in `slot`, measured
  // here: the device's capacity until it settles, then the most it held.
  // Nothing for a query not measured here.
  [[nodiscard]] std::optional<std::uint64_t> runningDemand(std::uint32_t slot, std::uint64_t deviceCapacity,
                                                           double now) const;
  // The estimate for a waiting query of `name` that declares nothing and was
  // never learned: the largest settled demand of a running query of that
  // name; nothing when none (the caller counts the whole device).
  [[nodiscard]] std::optional<std::uint64_t> estimateFor(const std::string& name, double now) const;

private:
  struct Measured {
    bool active = false;
    std::string name;
    double started = 0;
    double lastGrowth = 0;
    std::uint64_t peak = 0;
  };
  UndeclaredOptions options_;
  std::array<Measured, ipc::kMaxClients> slots_{};
};

} // namespace mqx::daemon
