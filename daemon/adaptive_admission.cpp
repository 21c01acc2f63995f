#include "adaptive_admission.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace mqx::daemon {
namespace {

std::uint64_t since(std::uint64_t now, std::uint64_t before) { return now > before ? now - before : 0; }

} // namespace

unsigned workingSetLimit(std::vector<std::uint64_t> peaks, std::uint64_t capacity) {
  std::sort(peaks.begin(), peaks.end());
  std::uint64_t sum = 0;
  for (std::size_t n = 0; n < peaks.size(); ++n) {
    sum += peaks[n];
    if (sum > capacity) return static_cast<unsigned>(std::max<std::size_t>(1, n));
  }
  return 0;
}

AdaptiveAdmission::AdaptiveAdmission(const AdaptiveOptions& options)
    : options_(options), limit_(std::clamp(options.initialLimit, 1u, std::max(1u, options.maxLimit))),
      levels_(std::max(1u, options.maxLimit) + 2), paging_(levels_.size()), roomLimit_(std::max(1u, options.maxLimit)) {
}

std::optional<double> AdaptiveAdmission::evictionShareAt(unsigned running, double now) const {
  if (running >= paging_.size()) return std::nullopt;
  const Paging& level = paging_[running];
  if (level.at < 0 || now - level.at > options_.memorySeconds) return std::nullopt;
  if (level.observed < options_.pagingMinimumSeconds) return std::nullopt;
  // Both sums faded alike since the last update: their ratio is the share.
  return level.evictionSeconds / level.seconds;
}

void AdaptiveAdmission::observePaging(const AdaptiveSample& sample, double dt) {
  const double evicting =
      static_cast<double>(since(sample.counters.evictionNanoseconds, lastCounters_.evictionNanoseconds)) * 1e-9;
  // An interval counts only where the same number of queries ran at both of
  // its samples (mqxd admits right after sampling, so admissions fall
  // between intervals, but a query may end inside one). Counted to the level
  // at its end, the evictions of a pair whose first query ended showed as
  // one query alone evicting 0.014-0.045 of the time on the simulated device
  // at 81 MiB, where one alone never evicts (admission-grid-sim-underload-
  // ad447c7): one at a time where two were best.
  const bool steady = sample.running == lastRunning_;
  // A drop starts a settle for the levels below the one that ran before it
  // (AdaptiveOptions::pagingSettleSeconds: their first counts are that
  // level's); a drop while one settles keeps the higher level.
  if (sample.running < lastRunning_) {
    const bool settling = droppedFrom_ != 0 && sample.seconds - droppedAt_ < options_.pagingSettleSeconds;
    droppedFrom_ = settling ? std::max(droppedFrom_, lastRunning_) : lastRunning_;
    droppedAt_ = sample.seconds;
  }
  const bool settled =
      sample.running >= droppedFrom_ || sample.seconds - dt >= droppedAt_ + options_.pagingSettleSeconds;
  lastRunning_ = sample.running;
  if (steady && settled && dt > 0 && sample.running >= 1 && sample.running < paging_.size()) {
    Paging& level = paging_[sample.running];
    // Not seen for memorySeconds: forgotten, as the limit's estimates are.
    if (level.at >= 0 && sample.seconds - level.at > options_.memorySeconds) level = Paging{};
    const double fade = level.at < 0 ? 0 : std::exp(-(sample.seconds - level.at) / options_.pagingMemorySeconds);
    level.seconds = level.seconds * fade + dt;
    level.evictionSeconds = level.evictionSeconds * fade + evicting;
    level.observed += dt;
    level.at = sample.seconds;
  }
  lastCounters_ = sample.counters;
  roomLimit_ = std::max(1u, options_.maxLimit);
  for (unsigned n = 1; n < roomLimit_; ++n) {
    const auto share = evictionShareAt(n, sample.seconds);
    if (share && *share > options_.growthEvictionShare) {
      roomLimit_ = n;
      break;
    }
  }
}

std::optional<double> AdaptiveAdmission::throughputAt(unsigned n, double now) const {
  if (n >= levels_.size()) return std::nullopt;
  const Level& level = levels_[n];
  if (level.measuredAt < 0 || now - level.measuredAt > options_.memorySeconds) return std::nullopt;
  return level.throughput;
}

void AdaptiveAdmission::forgetEstimates() {
  for (Level& level : levels_)
    level = Level{};
  unitChanged_ = true;
}

std::optional<AdaptiveDecision> AdaptiveAdmission::observe(const AdaptiveSample& sample) {
  // The bound holds from the first sample: it needs no interval, and mqxd
  // admits right after it (a query that arrived with the first waiting one
  // otherwise started beside it under the initial limit).
  workingSetLimit_ = sample.workingSetLimit;
  if (!started_) {
    started_ = true;
    windowStart_ = lastSample_ = sample.seconds;
    startCounters_ = lastCounters_ = sample.counters;
    lastRunning_ = sample.running;
    return std::nullopt;
  }
  const double dt = std::max(0.0, sample.seconds - lastSample_);
  lastSample_ = sample.seconds;
  observePaging(sample, dt);
  runningSeconds_ += dt * sample.running;
  waitingSeconds_ += sample.waiting > 0 ? dt : 0.0;
  // At the limit in force: room for one more may hold admission below
  // limit_, and a window held there binds all the same (decide()).
  atLimitSeconds_ += sample.running >= admissionLimit() ? dt : 0.0;
  const double window = sample.seconds - windowStart_;
  if (window + 1e-6 < options_.windowSeconds) return std::nullopt;
  if (since(sample.counters.launches, startCounters_.launches) < options_.minimumLaunches &&
      window + 1e-6 < std::max(options_.longestWindowSeconds, options_.windowSeconds))
    return std::nullopt;
  const DeviceCounters delta{since(sample.counters.launches, startCounters_.launches),
                             since(sample.counters.evictions, startCounters_.evictions),
                             since(sample.counters.evictionNanoseconds, startCounters_.evictionNanoseconds),
                             since(sample.counters.bytesMoved, startCounters_.bytesMoved),
                             std::max(0.0, sample.counters.work - startCounters_.work),
                             std::max(0.0, sample.counters.guessedWork - startCounters_.guessedWork)};
  AdaptiveDecision decision = decide(sample.seconds, window, delta, sample.workLearned);
  windowStart_ = sample.seconds;
  startCounters_ = sample.counters;
  runningSeconds_ = waitingSeconds_ = atLimitSeconds_ = 0;
  unitChanged_ = false;
  return decision;
}

std::optional<unsigned> AdaptiveAdmission::measuredLevel(const AdaptiveDecision& d, const DeviceCounters& delta,
                                                         bool workLearned) const {
  if (!d.binding || !workLearned || unitChanged_ || delta.launches == 0) return std::nullopt;
  if (d.guessedShare > options_.guessedWorkShare) return std::nullopt;
  const auto n = static_cast<unsigned>(std::lround(d.meanRunning));
  if (n < 1 || n >= levels_.size()) return std::nullopt;
  return n;
}

AdaptiveDecision AdaptiveAdmission::decide(double now, double window, const DeviceCounters& delta, bool workLearned) {
  AdaptiveDecision d;
  d.before = limit_;
  d.meanRunning = runningSeconds_ / window;
  d.throughput = delta.work / window;
  d.guessedShare = delta.work > 0 ? std::min(1.0, delta.guessedWork / delta.work) : 0.0;
  d.launchesPerSecond = static_cast<double>(delta.launches) / window;
  d.bytesPerSecond = static_cast<double>(delta.bytesMoved) / window;
  d.evictionsPerSecond = static_cast<double>(delta.evictions) / window;
  const double evictionSeconds = static_cast<double>(delta.evictionNanoseconds) * 1e-9;
  if (delta.evictions > 0) {
    const double cost = evictionSeconds / static_cast<double>(delta.evictions);
    costPerEviction_ = costPerEviction_ == 0 ? cost : 0.5 * costPerEviction_ + 0.5 * cost;
  }
  d.costPerEviction = costPerEviction_;
  // The share of the device's time spent evicting: the measured eviction
  // rate times what one eviction costs. Evictions of different processes are
  // added up, not divided among them: a GPU's mapping calls serialise with
  // the copies of every process (docs/daemon.md, "Adaptive admission").
  d.evictionShare = evictionSeconds / window;
  d.binding = waitingSeconds_ >= 0.5 * window && atLimitSeconds_ >= 0.5 * window;
  d.levels = describeLevels(now);
  // A window held by room for one more below the limit ran at the room's
  // level: the limit comes down to it, so that the rules below judge the
  // level that ran. Above it, the window's level was never the limit's: it
  // measured nothing, and evictions there could not be found to pay. On the
  // H200 (ssb-experiments-gpu-sf10-open-H200-ea6646c-rate2-s78, seed 7) a
  // window at 3.0 running with the limit at 4 and the room at 3 evicted
  // beyond the share and lowered 4 -> 2 without weighing 3's throughput.
  if (d.binding && roomLimit_ < limit_ && !noTwoWorkingSetsFit()) limit_ = roomLimit_;

  // The windows in a row over the eviction share count at one limit (the
  // room for one more above may just have lowered it).
  if (d.evictionShare <= options_.evictionShare || overShareLimit_ != limit_) windowsOverShare_ = 0;
  overShareLimit_ = limit_;
  auto finish = [&](unsigned limit, std::string why) {
    limit_ = std::clamp(limit, 1u, std::max(1u, options_.maxLimit));
    d.limit = limit_;
    d.why = std::move(why);
    return d;
  };
  if (d.evictionShare > options_.evictionShare)
    if (auto why = evictionsOfQueriesLeaving(d, now, startCounters_.work + delta.work)) return finish(limit_, *why);
  // A window estimates the throughput of the level it ran at (its mean
  // concurrency) when queries waited and the running ones reached the limit,
  // the work is in learned runs and there were launches. Recorded before the
  // eviction check: evictions are weighed against what the level gains.
  const auto measured = measuredLevel(d, delta, workLearned);
  if (measured) {
    Level& level = levels_[*measured];
    const bool fresh = level.measuredAt >= 0 && now - level.measuredAt <= options_.memorySeconds;
    level.throughput =
        fresh ? (1 - options_.smoothing) * level.throughput + options_.smoothing * d.throughput : d.throughput;
    level.measuredAt = now;
  }
  const auto here = throughputAt(limit_, now);
  std::optional<double> below;
  if (limit_ > 1) below = throughputAt(limit_ - 1, now);
  if (d.evictionShare > options_.evictionShare && measured == limit_ && here && below &&
      *here >= *below * (1 + options_.gain)) {
    // Evictions that pay for themselves: the level evicts beyond the share,
    // yet its measured throughput, evictions included, beats the level
    // below's by `gain`. The share is a proxy for thrashing; where the
    // throughput of both levels is known it is the measure itself. On the
    // H100 (ssb-experiments-gpu-sf10-open-H100-98f2c00-rate2-s7) FIX-3
    // evicted 365 times and was the best fixed level (0.580 queries/s
    // against FIX-2's 0.557); the default reached 3, saw an eviction share
    // of 0.097 and went back to 2: 0.924 of FIX-3. Not grown from here:
    // the level already evicts (no room for one more).
    paidLimit_ = limit_;
    paidAt_ = now;
    return finish(limit_, fmt::format("eviction share {:.3f} > {:.3f}, but {:.3f} queries/s at {} against {:.3f} at "
                                      "{}: the evictions pay",
                                      d.evictionShare, options_.evictionShare, *here, limit_, *below, limit_ - 1));
  }
  if (d.evictionShare > options_.evictionShare)
    if (auto why = heldForEvidence(d, now, true)) return finish(limit_, *why);
  if (d.evictionShare > options_.evictionShare && ++windowsOverShare_ < options_.evictionWindows)
    return finish(limit_, fmt::format("eviction share {:.3f} > {:.3f} in {} of {} windows in a row", d.evictionShare,
                                      options_.evictionShare, windowsOverShare_, options_.evictionWindows));
  if (d.evictionShare > options_.evictionShare) {
    // Multiplicative decrease: the resident sets of the running queries no
    // longer fit; fewer queries at once evict less (Denning's load control).
    // Rounded up: at the small limits where the link saturates, 3 -> 1 would
    // lose more than the evictions cost (3 -> 2, 2 -> 1, 8 -> 4).
    const auto lower = static_cast<unsigned>(std::ceil(limit_ * options_.decrease));
    if (paidLimit_ == limit_ && paidAt_ >= 0 && now - paidAt_ <= options_.memorySeconds && !below) {
      // Its evictions paid, but the level below's estimate is forgotten
      // (memorySeconds): one step down measures it again, and the level is
      // not barred, so the next window there may step back up.
      return finish(limit_ - 1, fmt::format("eviction share {:.3f} > {:.3f}; the evictions paid, but {} is no longer "
                                            "measured: measuring it again",
                                            d.evictionShare, options_.evictionShare, limit_ - 1));
    }
    // The limit that thrashed is not tried again until it is forgotten;
    // except where this window measured its throughput and the level below
    // has none: nothing yet says the evictions do not pay. The decrease then
    // measures the level below, and growth returns to the level left only
    // where its estimate beats that one by `gain` (where the evictions-pay
    // rule above keeps it). On the simulated device (admission-grid-sim-
    // 41d5b10, 81 MiB x2.2, seed 1) the default went 2 -> 1 on a share of
    // 0.082 with 1 never measured, 2 was barred for the rest of the run, and
    // FIX-2 served 1.083 queries/s against FIX-1's 0.891. At 1 there is no
    // level below to measure: one alone that thrashes still bars growth.
    if (!(limit_ > 1 && measured == limit_ && !below)) {
      congestedLimit_ = limit_;
      congestedAt_ = now;
    }
    decreasedAt_ = now;
    decreasedWork_ = startCounters_.work + delta.work;
    decreasedRunning_ = static_cast<unsigned>(std::ceil(d.meanRunning - 0.05));
    return finish(std::min(limit_ > 1 ? limit_ - 1 : 1u, std::max(1u, lower)),
                  fmt::format("eviction share {:.3f} > {:.3f} ({:.1f} evictions/s of {:.2f} ms each)", d.evictionShare,
                              options_.evictionShare, d.evictionsPerSecond, costPerEviction_ * 1e3));
  }
  if (!d.binding) return finish(limit_, "the limit does not bind");
  // Before any query finished, work is counted in nominal runs; the first
  // learned one changes the unit and every estimate is dropped
  // (forgetEstimates). A level measured in the old unit against one in the
  // new would look like a step that paid ten times over.
  if (!workLearned) return finish(limit_, "no query has finished yet: its work is not known");
  if (unitChanged_) return finish(limit_, "the window began before the first query's work was learned");
  // A window without launches (the running queries' processes still
  // starting, or all waiting for memory) says nothing about a level.
  if (delta.launches == 0) return finish(limit_, "no launches in the window");
  // Nor one whose work is mostly a guess: it estimated nothing (above), and
  // growing from it stacks one unmeasured level on another. On the simulated
  // device (admission-grid-sim-guessed-15-0dafce7, 122 MiB x4.4, seed 3) a
  // guessed window at 3 grew the limit to 4, which evicted 0.093 of the
  // time: 0.82 of FIX-2, where the window as a measure went back to 2.
  if (d.guessedShare > options_.guessedWorkShare)
    return finish(limit_, fmt::format("{:.2f} of the window's work is guessed (queries whose name has not finished "
                                      "a run)",
                                      d.guessedShare));
  const auto above = throughputAt(limit_ + 1, now);
  const double x = here.value_or(0), xBelow = below.value_or(0), xAbove = above.value_or(0);
  if (here && below && x < xBelow * (1 + options_.gain)) {
    // A step up that did not pay and evicted is not probed again until it
    // is forgotten, as one that evicted too much: each probe's queries run
    // to their end at the level that evicts. On the H100 (ssb-experiments-
    // gpu-sf10-open-H100-e54ee90-s89, seed 8) 3 gave no gain and evicted
    // 0.063 of the time; noisy windows at 2 then lowered 2's estimate, the
    // limit probed 3 again, evicted 0.29 of the time there, and the run
    // gave 0.90 of FIX-2's throughput. A step that did not pay without
    // evicting (the link saturated) costs nothing to probe again.
    if (auto why = heldForEvidence(d, now, false))
      return finish(limit_, fmt::format("{:.3f} queries/s at {}, no gain over {:.3f} at {}, {}", x, limit_, xBelow,
                                        limit_ - 1, *why));
    if (const auto share = evictionShareAt(limit_, now); share && *share > options_.growthEvictionShare) {
      congestedLimit_ = limit_;
      congestedAt_ = now;
    }
    return finish(limit_ - 1,
                  fmt::format("{:.3f} queries/s at {}, no gain over {:.3f} at {}", x, limit_, xBelow, limit_ - 1));
  }
  // Grow only with room: a node that evicts beyond noise has no memory for
  // another working set, and one more query only adds evictions (Denning's
  // load control; the band up to evictionShare is the controller's
  // hysteresis). On the simulated device (admission-grid-sim-9d0e8ac) the
  // default evicted 0.00-0.03 of the time at 2 running, where FIX-2 was the
  // best policy, and every step to 3 evicted 0.09-0.11 and came back; on the
  // H100 (b242294) FIX-2 did not evict at all and FIX-3 0.05 of the time.
  if (d.evictionShare > options_.growthEvictionShare)
    return finish(limit_, fmt::format("eviction share {:.3f}: no room for one more (grows at {:.3f} at most)",
                                      d.evictionShare, options_.growthEvictionShare));
  if (congestedAt_ >= 0 && now - congestedAt_ <= options_.memorySeconds && limit_ + 1 >= congestedLimit_)
    return finish(limit_, fmt::format("{} evicted too much, or evicted without gain, {:.0f} s ago", congestedLimit_,
                                      now - congestedAt_));
  // Grow only to a level whose working sets can be resident together. On the
  // H100 (ssb-experiments-gpu-sf10-open-H100-144faec, seed 7) three queries
  // ran a window without evicting, the limit grew to 4, where no four of the
  // seven queries' peaks fit the 4 GiB node, and that window evicted 0.128 of
  // the time: the run was 0.84 of FIX-3's. Evictions say so only after the
  // step up has paid for them; the peaks say so before.
  if (workingSetLimit_ != 0 && limit_ + 1 > workingSetLimit_)
    return finish(limit_, fmt::format("no {} of the queries' working sets fit the device together", limit_ + 1));
  if (here && above && xAbove < x * (1 + options_.gain))
    return finish(limit_, fmt::format("{:.3f} queries/s at {} not above {:.3f} at {}", xAbove, limit_ + 1, x, limit_));
  return finish(limit_ + 1, fmt::format("{:.3f} queries/s at {:.1f} running, evictions {:.3f} of the time",
                                        d.throughput, d.meanRunning, d.evictionShare));
}

std::optional<std::string> AdaptiveAdmission::evictionsOfQueriesLeaving(const AdaptiveDecision& d, double now,
                                                                        double workDone) const {
  // Admission does not stop a running query: a lower limit takes effect as
  // the queries admitted above it leave, and until then the evictions of a
  // window are theirs, not the limit's. As TCP halves once per window of
  // losses, not for every loss of the window it already halved, the limit
  // is not lowered for them. Three signs, each from a GPU run.
  if (d.meanRunning > limit_ + 0.5) {
    // Clearly above the limit for the window. On the H100
    // (ssb-experiments-gpu-sf10-open-H100-b242294-rate1-s78) the limit went
    // 4 -> 2 and then 2 -> 1 at 3.1 running, and the run was FIX-1's.
    return fmt::format("eviction share {:.3f}, but {:.1f} running over the limit: the last decrease has not taken "
                       "effect",
                       d.evictionShare, d.meanRunning);
  }
  if (const auto atLimit = evictionShareAt(limit_, now);
      d.meanRunning > limit_ && atLimit && *atLimit <= options_.evictionShare) {
    // Partly above the limit, and the limit's own level, measured alone
    // (room for one more counts only steady intervals), does not thrash:
    // the evictions are the level above's. On the H100
    // (ssb-experiments-gpu-sf10-open-H100-c6b8e82-s89, seed 8) a window at
    // 2.2 running after a probe of 3 evicted 0.083 of the time while 2 alone
    // evicted 0.022; the limit went 2 -> 1 and the run gave 0.74 of FIX-2's.
    return fmt::format("eviction share {:.3f}, but {:.1f} running over the limit and {} running alone evicted {:.3f}: "
                       "the evictions are the level above's",
                       d.evictionShare, d.meanRunning, limit_, *atLimit);
  }
  if (d.meanRunning > limit_ && !evictionShareAt(limit_, now) && droppedFrom_ > limit_ &&
      now - droppedAt_ < options_.pagingSettleSeconds + options_.pagingMinimumSeconds) {
    // Partly above the limit, and the limit's own level not measured since
    // the queries above it left (its first intervals settle: their
    // evictions are published late, AdaptiveOptions::pagingSettleSeconds):
    // nothing says the limit's level evicts, and the next window will.
    return fmt::format("eviction share {:.3f}, but {:.1f} running over the limit, and {} running alone not measured "
                       "since the level above left",
                       d.evictionShare, d.meanRunning, limit_);
  }
  const double workSinceDecrease = workDone - decreasedWork_;
  if (decreasedAt_ >= 0 && now - decreasedAt_ <= options_.memorySeconds && workSinceDecrease < decreasedRunning_) {
    // Within one round trip of the last decrease: the queries that ran at
    // it may still run at the limit or below it, and their working sets,
    // evicted while they thrashed, come back evicting others. The round
    // trip is their work: the decrease has taken effect once as many
    // queries' worth of work as ran then is done. On the H200
    // (ssb-experiments-gpu-sf10-open-H200-194e715-rate2-s7) the limit went
    // 4 -> 2 and, one window later at 2.4 running, 2 -> 1 on an eviction
    // share of 0.111 (2 alone: 0.083, past the sign above by 0.003); the
    // rest of the run was FIX-1's, 0.75 of FIX-2.
    return fmt::format("eviction share {:.3f}, but the last decrease has not taken effect: {:.1f} of the {} queries' "
                       "worth of work then running done since",
                       d.evictionShare, workSinceDecrease, decreasedRunning_);
  }
  return std::nullopt;
}

std::optional<std::string> AdaptiveAdmission::heldForEvidence(const AdaptiveDecision& d, double now,
                                                              bool forEvictions) const {
  if (options_.levelEvidenceSeconds <= 0 || limit_ <= 1 || limit_ >= paging_.size()) return std::nullopt;
  if (d.evictionShare > options_.thrashShare) return std::nullopt;
  const Paging& level = paging_[limit_];
  const bool fresh = level.at >= 0 && now - level.at <= options_.memorySeconds;
  const double observed = fresh ? level.observed : 0.0;
  if (observed < options_.levelEvidenceSeconds) {
    // A level's first seconds are its least typical: the query admitted to
    // reach it loads its columns, evicting the others', and a 2 s window's
    // throughput counts the few queries that happened to end in it.
    if (forEvictions)
      return fmt::format("eviction share {:.3f} > {:.3f}, but {} has run {:.1f} s of the {:.1f} s that judge a level",
                         d.evictionShare, options_.evictionShare, limit_, observed, options_.levelEvidenceSeconds);
    return fmt::format("but {} has run {:.1f} s of the {:.1f} s that judge a level", limit_, observed,
                       options_.levelEvidenceSeconds);
  }
  if (!forEvictions) return std::nullopt;
  // Judged: the level's own share decides, not the window's burst.
  const auto share = evictionShareAt(limit_, now);
  if (share && *share <= options_.evictionShare)
    return fmt::format("eviction share {:.3f} > {:.3f} in the window, but {} evicted {:.3f} over its {:.1f} s",
                       d.evictionShare, options_.evictionShare, limit_, *share, observed);
  return std::nullopt;
}

std::string AdaptiveAdmission::describeLevels(double now) const {
  std::string text;
  for (unsigned n = 1; n < paging_.size(); ++n) {
    const Paging& level = paging_[n];
    if (level.at < 0 || now - level.at > options_.memorySeconds || level.seconds <= 0) continue;
    text += fmt::format("{}{}: {:.3f} of {:.1f} s", text.empty() ? "" : ", ", n, level.evictionSeconds / level.seconds,
                        level.observed);
  }
  return text.empty() ? "no level measured" : text;
}

} // namespace mqx::daemon
