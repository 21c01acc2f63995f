// SimLink: the copy link of the simulated device shared by every process of
// a node, as the PCIe link of a GPU is. Without it each process charges its
// copies against a link of its own, so N processes copy N times as fast as
// one and the link never binds (docs/daemon.md, "Adaptive admission": the
// regime where admission by memory alone over-admits is the one where the
// link saturates at two or three queries).
//
// The link is a first-come-first-served reservation per direction: a copy of
// d seconds starts when the link is free (or now) and holds it for d; the
// caller then sleeps until its end. The reservation is one atomic word per
// direction in a small POSIX shared-memory object named after the link, so
// that the processes of one node (mqxd's sim.link_name) share it and other
// nodes do not.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace mqx::device {

class SimLink {
public:
  enum class Direction : unsigned { ToDevice = 0, ToHost = 1 };

  // Opens (or creates) the link `name` of this user; nullptr, with a log
  // line, when the shared object cannot be had (copies are then charged
  // per process, as without a link).
  [[nodiscard]] static std::unique_ptr<SimLink> open(const std::string& name);
  ~SimLink();
  SimLink(const SimLink&) = delete;
  SimLink& operator=(const SimLink&) = delete;

  // Reserves the link for `seconds` in `direction` after whatever holds it
  // and returns when the reservation ends (CLOCK_MONOTONIC).
  void transfer(Direction direction, double seconds);

  // The reservation's end: the monotonic nanoseconds at which a copy of
  // `seconds` issued at `nowNanoseconds` ends, given that the link is busy
  // until `busyUntil` (pure; the rule transfer() applies).
  [[nodiscard]] static std::uint64_t reservationEnd(std::uint64_t busyUntil, std::uint64_t nowNanoseconds,
                                                    double seconds);

private:
  struct Shared {
    std::atomic<std::uint64_t> busyUntil[2];
  };
  SimLink(Shared* shared, std::string name) : shared_(shared), name_(std::move(name)) {}
  Shared* shared_;
  std::string name_;
};

// The shared-memory object of link `name` for uid `uid`: "/mqx-<uid>-simlink-<name>".
[[nodiscard]] std::string simLinkObjectName(const std::string& name, unsigned uid);

} // namespace mqx::device
