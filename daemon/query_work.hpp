// QueryWork: how many kernel launches one run of each named query makes,
// learned from its finished runs, so that adaptive admission measures the
// device's throughput in queries' worth of work rather than in launches.
//
// Why: launches per second depend on which queries run. In the SSB mix a
// window of q4.3 (many short kernels) counts three times the launches of a
// window of q1.1 at the same concurrency, so comparing two windows' launch
// rates compared the mix, not the concurrency: on the simulated device the
// default stepped 2 -> 3 -> 4 on "14 then 41 launches/s" and evicted as much
// as Weight (ssb_pipeline.admission_smoke, 1 run in 3 failed). A launch of a
// query of L launches per run is 1/L of that query done, so Σ Δlaunches/L
// over a window is the queries completed in it, whatever the mix
// (docs/daemon.md, "Adaptive admission").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace mqx::daemon {

class QueryWork {
public:
  // A run's launch count is averaged with the name's earlier ones by this
  // weight (the newest run counts this much).
  explicit QueryWork(double smoothing = 0.5) : smoothing_(smoothing) {}

  // One run of `name` finished after `launches` launches (0: nothing learned).
  void finished(const std::string& name, std::uint64_t launches);

  // The part of one run of `name` that `launches` launches are. A name never
  // seen finishing counts as the mean of the learned names; before any name
  // is learned, as kNominalLaunchesPerRun.
  [[nodiscard]] double workOf(const std::string& name, std::uint64_t launches) const;

  // Whether any name is learned: the unit of workOf changes when the first is.
  [[nodiscard]] bool learned() const { return !launchesPerRun_.empty(); }
  // Whether `name` finished a run: workOf measures its launches rather than
  // guessing their part of a run.
  [[nodiscard]] bool knows(const std::string& name) const { return launchesPerRun_.contains(name); }

  static constexpr double kNominalLaunchesPerRun = 1000.0;
  // Names come from clients; far more than a node's queries, and a bound on
  // what they can make mqxd keep.
  static constexpr std::size_t kMaxNames = 4096;

private:
  double smoothing_;
  std::unordered_map<std::string, double> launchesPerRun_;
  double sumOfLearned_ = 0; // Σ launchesPerRun_, for the mean
};

} // namespace mqx::daemon
