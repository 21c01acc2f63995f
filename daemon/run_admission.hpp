// RunAdmission: mqx-run's way to its query's admission (docs/daemon.md,
// "Waiting for admission", "Starting before admission", "Upgrading with
// queries running"), as a state machine of its own:
//
//   Connecting --no mqxd--> NoDaemon
//   Connecting --joined the node--> Placing (started before admission) or Waiting
//   Placing --placed on a device--> Waiting, its program started (it waits at its gate)
//   Placing --not placed in time--> Waiting (its program starts once admitted)
//   Placing --the program cannot start--> StartFailed
//   Waiting --admitted--> Admitted
//   Waiting --its program ended--> EndedBeforeAdmission (the record withdrawn)
//   Waiting --not admitted in time--> TimedOut (the record, then the program withdrawn)
//   Waiting --the record lost, the node's lock kept--> RecordLost (withdrawn)
//   Waiting --mqxd went away--> DaemonRestarted (a program started before admission stopped)
//   DaemonRestarted --a new mqxd within the wait--> Placing or Waiting, on a new record
//   DaemonRestarted --none came--> DaemonNotBack
//
// Connecting, Placing, Waiting and DaemonRestarted lead on; the others are
// final. No transition throws to end the wait: each returns the state it
// leads to. Every transition says on stderr what the user needs to know;
// what a final state means for mqx-run's exit status is its caller's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ipc/admission_client.hpp"

namespace mqx::daemon {

// The query's program, as the admission starts and stops it.
class QueryProgram {
public:
  virtual ~QueryProgram() = default;
  // Starts it for the query record in `querySlot` on `device` (a GPU UUID or
  // "sim-<n>"; "" for any), before the query's admission when
  // `awaitAdmission`. Its pid, or -1 when it cannot be started.
  virtual pid_t start(std::uint32_t querySlot, const std::string& device, bool awaitAdmission) = 0;
  // Its exit status once it has ended, else nullopt (never waits).
  virtual std::optional<int> ended(pid_t pid) = 0;
  // Stops it and waits until it has ended (bounded).
  virtual void stop(pid_t pid) = 0;
};

struct RunAdmissionSettings {
  std::string name; // the query's
  std::uint64_t weightedDemand = 0;
  std::uint64_t peakDemand = 0;
  ipc::NodeOptions node;
  ipc::AdmissionOptions admission;
  std::chrono::seconds timeout{0};      // --timeout, daemon.admission_timeout_s; 0: no limit
  std::chrono::seconds restartWait{30}; // --daemon-restart-wait
  bool startBeforeAdmission = true;     // daemon.start_before_admission
  // How long a query started before admission waits for mqxd to place it
  // (mqxd places on its next pass, within milliseconds).
  std::chrono::milliseconds placementWait{10'000};
};

class RunAdmission {
public:
  enum class State {
    Connecting,
    Placing,
    Waiting,
    DaemonRestarted,
    Admitted,
    NoDaemon,
    DaemonNotBack,
    TimedOut,
    RecordLost,
    EndedBeforeAdmission,
    StartFailed,
  };
  static bool isFinal(State state);

  RunAdmission(RunAdmissionSettings settings, QueryProgram& program);
  RunAdmission(const RunAdmission&) = delete;
  RunAdmission& operator=(const RunAdmission&) = delete;

  // One transition from the current state; the state it led to (a final
  // state stays).
  State step();
  // Steps until a final state, which it returns.
  State run();
  State state() const { return state_; }

  // Admitted: the query's client (its record, the device mqxd placed it on).
  ipc::AdmissionClient& client() { return *client_; }
  // The program started before admission, or 0 (none, or no longer running).
  pid_t early() const { return early_; }
  // EndedBeforeAdmission: the program's exit status.
  int endedStatus() const { return endedStatus_; }
  // When the query first joined the node (its wait for admission began).
  std::chrono::steady_clock::time_point waitBegan() const { return waitBegan_; }

private:
  State connect();
  State place();
  State wait();
  State awaitNextDaemon();
  // Placing for a query started before admission whose program has not
  // started yet, else Waiting.
  State ask() const;
  // The record goes first, so that the program's gate refuses and it never
  // touches a device, then the program.
  void withdraw();

  RunAdmissionSettings settings_;
  QueryProgram& program_;
  State state_ = State::Connecting;
  std::shared_ptr<ipc::AdmissionClient> client_;
  pid_t early_ = 0; // the program, started before admission
  int endedStatus_ = 0;
  bool startBeforeAdmission_;
  std::chrono::steady_clock::time_point waitBegan_{};
  std::optional<std::chrono::milliseconds> waitTimeout_; // what is left of settings_.timeout
  std::chrono::steady_clock::time_point giveUpAt_{};     // DaemonRestarted: when to stop waiting for mqxd
};

} // namespace mqx::daemon
