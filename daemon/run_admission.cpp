#include "run_admission.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "ipc/node_state.hpp"

namespace mqx::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

long long wholeSeconds(Clock::duration duration) {
  return static_cast<long long>(std::chrono::ceil<seconds>(duration).count());
}

} // namespace

bool RunAdmission::isFinal(State state) {
  switch (state) {
  case State::Connecting:
  case State::Placing:
  case State::Waiting:
  case State::DaemonRestarted: return false;
  default: return true;
  }
}

RunAdmission::RunAdmission(RunAdmissionSettings settings, QueryProgram& program)
    : settings_(std::move(settings)), program_(program), startBeforeAdmission_(settings_.startBeforeAdmission) {
  if (settings_.timeout.count() != 0) waitTimeout_ = settings_.timeout;
}

RunAdmission::State RunAdmission::step() {
  switch (state_) {
  case State::Connecting: state_ = connect(); break;
  case State::Placing: state_ = place(); break;
  case State::Waiting: state_ = wait(); break;
  case State::DaemonRestarted: state_ = awaitNextDaemon(); break;
  default: break;
  }
  return state_;
}

RunAdmission::State RunAdmission::run() {
  while (!isFinal(state_))
    step();
  return state_;
}

RunAdmission::State RunAdmission::ask() const {
  return startBeforeAdmission_ && early_ == 0 ? State::Placing : State::Waiting;
}

void RunAdmission::withdraw() {
  client_->membership().leave();
  if (early_ > 0) program_.stop(early_);
  early_ = 0;
}

RunAdmission::State RunAdmission::connect() {
  client_ = ipc::AdmissionClient::connect(settings_.node, settings_.admission, settings_.name);
  if (client_ == nullptr) return State::NoDaemon;
  waitBegan_ = Clock::now();
  return ask();
}

RunAdmission::State RunAdmission::place() {
  // Placed first: the program is shown its one device from its first
  // instruction (a program may count devices before its first driver call,
  // as PyTorch does through NVML).
  const auto placed = client_->requestPlacement(settings_.weightedDemand, settings_.peakDemand, settings_.placementWait);
  if (placed) {
    const pid_t started = program_.start(client_->membership().slot(), placed->identity, true);
    if (started < 0) return State::StartFailed;
    early_ = started;
    return State::Waiting;
  }
  const pid_t daemon = client_->membership().node().daemonPid;
  // Not placed by a live mqxd: the program starts once admitted. (A mqxd
  // gone is found by the wait.)
  if (daemon != 0 && ipc::processAlive(daemon)) {
    std::fprintf(stderr, "mqx-run: query '%s': mqxd placed it on no device within %lld s; it starts once admitted\n",
                 settings_.name.c_str(), wholeSeconds(settings_.placementWait));
    startBeforeAdmission_ = false;
  }
  return State::Waiting;
}

RunAdmission::State RunAdmission::wait() {
  using Admission = ipc::AdmissionClient::Admission;
  ipc::AdmissionClient::AdmissionWait wait;
  wait.timeout = waitTimeout_;
  wait.report = [this](const std::string& why) {
    std::fprintf(stderr, "mqx-run: query '%s' (pid %d) waits for admission: %s\n", settings_.name.c_str(),
                 static_cast<int>(getpid()), why.c_str());
  };
  // A program started before admission waits at its first CUDA call; its
  // end ends the wait.
  wait.poll = [this] {
    if (early_ <= 0) return true;
    const auto status = program_.ended(early_);
    if (!status) return true;
    endedStatus_ = *status;
    early_ = 0;
    return false;
  };
  switch (client_->waitForAdmission(settings_.weightedDemand, settings_.peakDemand, wait)) {
  case Admission::Admitted: return State::Admitted;
  case Admission::Stopped:
    client_->membership().leave();
    return State::EndedBeforeAdmission;
  case Admission::Reclaimed:
  case Admission::NodeLocked:
    std::fprintf(stderr, "mqx-run: query '%s' lost its record on the node while it waited for admission\n",
                 settings_.name.c_str());
    withdraw();
    return State::RecordLost;
  case Admission::TimedOut:
    std::fprintf(stderr,
                 "mqx-run: query '%s' not admitted within %lld s (--timeout, daemon.admission_timeout_s); giving "
                 "up%s: %s\n",
                 settings_.name.c_str(), static_cast<long long>(settings_.timeout.count()),
                 early_ > 0 ? " and stopping it (it has not used a device)" : "",
                 client_->admissionWaitReason().c_str());
    withdraw();
    return State::TimedOut;
  case Admission::DaemonGone: break;
  }
  // A restart or an upgrade (docs/daemon.md, "Upgrading with queries
  // running"): the query has not run on a device, so it asks the next mqxd,
  // within what is left of its admission wait. A program started before
  // admission is stopped (its record went with mqxd) and started again for
  // the new record.
  if (early_ > 0) {
    std::fprintf(stderr,
                 "mqx-run: query '%s': stopping its program, which waited for admission by the mqxd that went away; "
                 "it starts again for the next one\n",
                 settings_.name.c_str());
    withdraw();
  }
  client_.reset();
  giveUpAt_ = Clock::now() + settings_.restartWait;
  if (settings_.timeout.count() != 0) giveUpAt_ = std::min(giveUpAt_, waitBegan_ + settings_.timeout);
  if (Clock::now() < giveUpAt_)
    std::fprintf(stderr,
                 "mqx-run: query '%s' (pid %d): mqxd went away before admitting it; waiting up to %lld s for the next "
                 "mqxd (--daemon-restart-wait)\n",
                 settings_.name.c_str(), static_cast<int>(getpid()), wholeSeconds(giveUpAt_ - Clock::now()));
  return State::DaemonRestarted;
}

RunAdmission::State RunAdmission::awaitNextDaemon() {
  if (Clock::now() >= giveUpAt_) {
    std::fprintf(stderr, "mqx-run: mqxd went away before admitting the query, and no mqxd came back within the wait "
                         "(--daemon-restart-wait, --timeout)\n");
    return State::DaemonNotBack;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  client_ = ipc::AdmissionClient::connect(settings_.node, settings_.admission, settings_.name);
  if (client_ == nullptr) return State::DaemonRestarted;
  std::fprintf(stderr, "mqx-run: query '%s' asks the new mqxd (pid %d) for admission\n", settings_.name.c_str(),
               static_cast<int>(client_->membership().node().daemonPid));
  if (settings_.timeout.count() != 0)
    waitTimeout_ = std::max<std::chrono::milliseconds>(
        seconds(1), std::chrono::ceil<seconds>(waitBegan_ + settings_.timeout - Clock::now()));
  return ask();
}

} // namespace mqx::daemon
