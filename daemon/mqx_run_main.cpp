// mqx-run [options] -- ./query args...: runs one query on the node. Asks mqxd
// for admission (paper §5) with the demand of the query's plan (--plan), of
// earlier runs (learned by mqxd from --name), or none; waits; runs the query
// with libmqx.so preloaded; forwards signals; returns the query's exit status.
// By default (daemon.start_before_admission) the query's program starts at
// once and each of its processes waits for the admission at its first CUDA
// call (ipc/query_admission_gate.hpp), so that its start-up overlaps the
// wait; a query not admitted in time is then stopped before it touched a
// device (docs/daemon.md, "Starting before admission").
// While it waits it says why on stderr, and it gives up after --timeout
// (daemon.admission_timeout_s) with exit status 75 (docs/daemon.md). When
// mqxd stops while the query waits (a restart or an upgrade), it waits for
// the next mqxd, at most --daemon-restart-wait seconds, and asks it. On a
// node of several devices mqxd places the query on one (or it asks for one
// with --device), and the query runs on it: CUDA_VISIBLE_DEVICES is its
// GPU's UUID, MQX_SIM_DEVICE its simulated device (docs/daemon.md, "Several
// GPUs").
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "config/config.hpp"
#include "embedded/runtime_options.hpp"
#include "ipc/admission_client.hpp"
#include "ipc/query_admission_gate.hpp"
#include "mqx/version.hpp"
#include "query_name.hpp"
#include "query_plan.hpp"

namespace {

constexpr int kNoDaemonExit = 69;         // EX_UNAVAILABLE
constexpr int kAdmissionTimeoutExit = 75; // EX_TEMPFAIL: not admitted in time, try again later
constexpr int kUsageExit = 2;
// How long a query started before admission waits for mqxd to place it on a
// device (mqxd places on its next pass, within milliseconds).
constexpr std::chrono::seconds kPlacementWait{10};
// mqx-run's own failures, apart from any status the query may return itself
// (docs/daemon.md, "Exit status"): a bad configuration or plan file, and a
// failure of mqx-run (fork, the node lost under it).
constexpr int kConfigurationExit = 78; // EX_CONFIG
constexpr int kInternalExit = 70;      // EX_SOFTWARE

volatile sig_atomic_t childPid = 0;

// The query runs in a process group of its own (its pid), so that a signal,
// the timeout's SIGTERM and SIGKILL reach every process it started, not only
// the first.
void forwardSignal(int signal) {
  if (childPid > 0) kill(-childPid, signal);
}

struct Options {
  std::string plan;
  std::string name;
  std::string device; // --device: a GPU UUID, sim-<n> or a node index; "": mqxd places the query
  bool stats = false;
  bool allowNoDaemon = false;
  std::optional<unsigned> timeoutSeconds;   // --timeout; else daemon.admission_timeout_s
  unsigned restartWaitSeconds = 30;         // --daemon-restart-wait
  std::optional<bool> startBeforeAdmission; // --start-before-admission, --start-when-admitted
  std::vector<char*> command;
};

void usage(FILE* out) {
  std::fprintf(out, "usage: mqx-run [--plan FILE] [--name NAME] [--device ID] [--timeout SECONDS] "
                    "[--daemon-restart-wait SECONDS] [--start-before-admission | --start-when-admitted] "
                    "[--stats] [--allow-no-daemon] -- QUERY [ARGS...]\n"
                    "  --plan FILE        the query's operator plan (time and device memory per operator)\n"
                    "  --name NAME        the query's name (demand is learned per name); default: plan name or "
                    "QUERY's file name (an interpreter's with its script: \"python3 train.py\")\n"
                    "  --device ID        run on this device of the node (a GPU UUID, sim-N or the node's index N) "
                    "instead of where mqxd places it (daemon.placement)\n"
                    "  --timeout SECONDS  give up waiting for admission after SECONDS (exit 75; the query's "
                    "processes are stopped); 0: no limit; "
                    "default: daemon.admission_timeout_s\n"
                    "  --daemon-restart-wait SECONDS  when mqxd stops before admitting the query (a restart, "
                    "an upgrade), wait that long for the next one (default 30; 0: exit 69 at once)\n"
                    "  --start-before-admission  start QUERY at once; its processes wait for admission at their "
                    "first CUDA call (default: daemon.start_before_admission)\n"
                    "  --start-when-admitted     start QUERY only once it is admitted\n"
                    "  --stats            print waiting time, run time and peak device memory at exit\n"
                    "  --allow-no-daemon  run the query alone when no mqxd is running\n"
                    "  --version          print the version and the commit, and exit\n"
                    "exit status: the query's; 2 a usage error, 69 no mqxd, 75 not admitted in time, 78 a bad "
                    "configuration or plan, 70 mqx-run failed\n");
}

bool parse(int argc, char** argv, Options* options) {
  int i = 1;
  // The value of the option at argv[i]; null, said in one line, when there
  // is none (the end, or "--", which starts the query).
  auto valueOf = [&](const std::string& option) -> const char* {
    if (i + 1 >= argc || std::strcmp(argv[i + 1], "--") == 0) {
      std::fprintf(stderr, "mqx-run: %s needs a value\n", option.c_str());
      return nullptr;
    }
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--plan" || arg == "--name") {
      const char* value = valueOf(arg);
      if (value == nullptr) return false;
      if (*value == '\0') {
        std::fprintf(stderr, "mqx-run: %s wants a non-empty value\n", arg.c_str());
        return false;
      }
      (arg == "--plan" ? options->plan : options->name) = value;
    } else if (arg == "--device") {
      const char* value = valueOf(arg);
      if (value == nullptr) return false;
      const std::string text = value;
      const bool printable = std::all_of(text.begin(), text.end(), [](unsigned char c) { return c > ' ' && c < 127; });
      if (text.empty() || !printable || text.size() >= mqx::ipc::kDeviceIdentityBytes) {
        std::fprintf(stderr, "mqx-run: --device wants a GPU UUID (GPU-...), sim-N or a device index, not '%s'\n",
                     text.c_str());
        return false;
      }
      options->device = text;
    } else if (arg == "--timeout" || arg == "--daemon-restart-wait") {
      const char* value = valueOf(arg);
      if (value == nullptr) return false;
      const std::string text = value;
      char* end = nullptr;
      errno = 0;
      const unsigned long seconds = std::strtoul(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || text[0] == '-' || errno != 0 || seconds > 31'536'000) {
        std::fprintf(stderr, "mqx-run: %s wants whole seconds from 0 to 31536000, not '%s'\n", arg.c_str(),
                     text.c_str());
        return false;
      }
      if (arg == "--timeout") {
        options->timeoutSeconds = static_cast<unsigned>(seconds);
      } else {
        options->restartWaitSeconds = static_cast<unsigned>(seconds);
      }
    } else if (arg == "--start-before-admission" || arg == "--start-when-admitted") {
      const bool before = arg == "--start-before-admission";
      if (options->startBeforeAdmission && *options->startBeforeAdmission != before) {
        std::fprintf(stderr, "mqx-run: --start-before-admission and --start-when-admitted exclude each other\n");
        return false;
      }
      options->startBeforeAdmission = before;
    } else if (arg == "--stats") {
      options->stats = true;
    } else if (arg == "--allow-no-daemon") {
      options->allowNoDaemon = true;
    } else if (arg == "--version") {
      std::printf("mqx-run %s (commit %s)\n", mqx::kVersion, mqx::kCommit);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "mqx-run: unknown option '%s'\n", arg.c_str());
      return false;
    }
  }
  for (; i < argc; ++i)
    options->command.push_back(argv[i]);
  if (options->command.empty()) {
    std::fprintf(stderr, "mqx-run: no query to run\n");
    return false;
  }
  options->command.push_back(nullptr);
  return true;
}

// libmqx.so: MQX_LIBRARY, else next to this executable (build tree: bin/ and
// lib/; install: bin/ and lib/).
std::string findLibrary() {
  if (const char* explicitPath = std::getenv("MQX_LIBRARY"); explicitPath != nullptr && *explicitPath != '\0')
    return explicitPath;
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  for (const char* relative : {"../lib/libmqx.so", "libmqx.so"}) {
    const auto candidate = self.parent_path() / relative;
    if (std::filesystem::exists(candidate, error)) return std::filesystem::weakly_canonical(candidate, error).string();
  }
  return {};
}

void forwardSignals() {
  struct sigaction forward {};
  forward.sa_handler = forwardSignal;
  sigemptyset(&forward.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2})
    sigaction(signal, &forward, nullptr);
}

// A query in a process group of its own is not in the terminal's
// foreground: when mqx-run is, the query's group takes the terminal (as a
// shell gives it to a job), so that it may read it and Ctrl-C reaches it,
// and mqx-run takes it back when the query ends.
pid_t terminalGivenBy = 0;

void takeTerminal(pid_t child) {
  if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp()) return;
  signal(SIGTTOU, SIG_IGN); // a background mqx-run asking for the terminal back is not stopped
  if (tcsetpgrp(STDIN_FILENO, child) == 0) terminalGivenBy = getpgrp();
}

void giveTerminalBack() {
  if (terminalGivenBy == 0) return;
  tcsetpgrp(STDIN_FILENO, terminalGivenBy);
  terminalGivenBy = 0;
}

int exitStatusOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Runs the query's program with libmqx.so preloaded, for the query record in
// `querySlot`: on `device` (a query admitted before it starts: the device
// mqxd placed it on), or, with `awaitAdmission`, before the query is
// admitted (its processes wait for it: ipc/query_admission_gate.hpp).
// Returns the child's pid, or -1 when it could not be forked.
pid_t startQuery(const Options& options, std::uint32_t querySlot, const std::string& device, bool awaitAdmission) {
  const std::string library = findLibrary();
  if (library.empty())
    mqx::log(mqx::LogLevel::Warn, "mqx-run: libmqx.so not found (set MQX_LIBRARY); running the query without it");
  forwardSignals();
  const pid_t child = fork();
  if (child < 0) {
    std::perror("mqx-run: fork");
    return -1;
  }
  if (child == 0) {
    setpgid(0, 0); // its own process group (forwardSignal)
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2})
      ::signal(signal, SIG_DFL);
    if (!library.empty()) {
      const char* previous = std::getenv("LD_PRELOAD");
      std::string preload = library + (previous != nullptr && *previous != '\0' ? std::string(":") + previous : "");
      setenv("LD_PRELOAD", preload.c_str(), 1);
    }
    if (querySlot != mqx::ipc::kNoSlot) setenv("MQX_QUERY_SLOT", std::to_string(querySlot).c_str(), 1);
    if (awaitAdmission) setenv("MQX_AWAIT_ADMISSION", std::to_string(getppid()).c_str(), 1);
    mqx::ipc::exportPlacedDevice(device);
    execvp(options.command[0], options.command.data());
    std::fprintf(stderr, "mqx-run: cannot run '%s': %s\n", options.command[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child); // also here: whichever runs first, the group exists before a signal is sent to it
  takeTerminal(child);
  childPid = child;
  return child;
}

// The query's exit status once it ends.
int waitForQuery(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  childPid = 0;
  giveTerminalBack();
  return exitStatusOf(status);
}

// The query's exit status when it has ended, else nullopt (not waiting).
std::optional<int> queryEnded(pid_t child) {
  int status = 0;
  if (waitpid(child, &status, WNOHANG) != child) return std::nullopt;
  childPid = 0;
  giveTerminalBack();
  return exitStatusOf(status);
}

// Stops a query started before admission that will not be admitted (its
// processes have not used a device: their gate refuses once the record is
// gone): SIGTERM, and SIGKILL after 5 s. Bounded.
void stopQuery(pid_t child, const std::string& name) {
  kill(-child, SIGTERM); // the whole group: processes the query started too
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (queryEnded(child)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "mqx-run: query '%s' (pid %d) did not stop within 5 s of SIGTERM; killing it\n", name.c_str(),
               static_cast<int>(child));
  kill(-child, SIGKILL);
  waitForQuery(child);
}

int runQuery(const Options& options, std::uint32_t querySlot, const std::string& device = {}) {
  const pid_t child = startQuery(options, querySlot, device, false);
  return child < 0 ? kInternalExit : waitForQuery(child);
}

// The query's program ended before it was admitted (started before
// admission): its status ends the wait.
struct EndedBeforeAdmission {
  int status;
};

} // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, &options)) {
    usage(stderr);
    return kUsageExit;
  }
  try {
    mqx::Config config = mqx::loadConfig();
    mqx::setLogLevel(config.logLevel);
    std::uint64_t weighted = 0, peak = 0;
    if (!options.plan.empty()) {
      const auto plan = mqx::daemon::QueryPlan::load(options.plan);
      weighted = plan.weightedDemand();
      peak = plan.peakDemand();
      if (options.name.empty()) options.name = plan.name;
    }
    if (options.name.empty()) options.name = mqx::daemon::defaultQueryName({options.command.begin(), options.command.end() - 1});

    using mqx::ipc::AdmissionClient;
    auto nodeOptions = mqx::embedded::nodeOptions(config);
    nodeOptions.device = options.device;
    const auto admissionOptions = mqx::embedded::admissionOptions(config);
    auto client = AdmissionClient::connect(nodeOptions, admissionOptions, options.name);
    if (client == nullptr) {
      if (!options.allowNoDaemon && !config.allowNoDaemon) {
        std::fprintf(stderr, "mqx-run: no mqxd is running for this user%s (start mqxd, or pass --allow-no-daemon)\n",
                     config.daemonInstance.empty() ? "" : (" and instance " + config.daemonInstance).c_str());
        return kNoDaemonExit;
      }
      return runQuery(options, mqx::ipc::kNoSlot, options.device); // alone: a device named by identity still holds
    }
    const auto start = std::chrono::steady_clock::now();
    // 0: no limit.
    const std::chrono::seconds admissionTimeout(options.timeoutSeconds.value_or(config.admissionTimeoutSeconds));
    bool startBeforeAdmission = options.startBeforeAdmission.value_or(config.startBeforeAdmission);
    AdmissionClient::AdmissionWait wait;
    if (admissionTimeout.count() != 0) wait.timeout = admissionTimeout;
    wait.report = [&](const std::string& why) {
      std::fprintf(stderr, "mqx-run: query '%s' (pid %d) waits for admission: %s\n", options.name.c_str(),
                   static_cast<int>(getpid()), why.c_str());
    };
    // Started before admission: the program, which waits at its first CUDA
    // call; its end ends the wait (poll runs every 200 ms).
    pid_t early = 0;
    wait.poll = [&] {
      if (early > 0)
        if (const auto status = queryEnded(early)) throw EndedBeforeAdmission{*status};
    };
    // Not admitted: the record goes first, so that the program's gate
    // refuses and it never touches a device, then the program.
    const auto withdraw = [&] {
      client->membership().leave();
      if (early > 0) stopQuery(early, options.name);
      early = 0;
    };
    for (bool admitted = false; !admitted;) {
      if (startBeforeAdmission && early == 0) {
        // Placed first: the program is shown its one device from its first
        // instruction (a program may count devices before its first driver
        // call, as PyTorch does through NVML).
        const auto placed = client->requestPlacement(weighted, peak, kPlacementWait);
        if (placed) {
          early = startQuery(options, client->membership().slot(), placed->identity, true);
          if (early < 0) return kInternalExit;
        } else if (client->membership().node().daemonPid != 0 &&
                   mqx::ipc::processAlive(client->membership().node().daemonPid)) {
          std::fprintf(stderr,
                       "mqx-run: query '%s': mqxd placed it on no device within %lld s; it starts once admitted\n",
                       options.name.c_str(), static_cast<long long>(kPlacementWait.count()));
          startBeforeAdmission = false;
        }
      }
      AdmissionClient::Admission outcome;
      try {
        outcome = client->waitForAdmission(weighted, peak, wait);
      } catch (const EndedBeforeAdmission& ended) {
        client->membership().leave();
        if (options.stats)
          std::fprintf(stderr, "mqx-run: query '%s' ended before it was admitted, exit %d\n", options.name.c_str(),
                       ended.status);
        return ended.status;
      }
      switch (outcome) {
      case AdmissionClient::Admission::Admitted: admitted = true; break;
      case AdmissionClient::Admission::Reclaimed:
      case AdmissionClient::Admission::NodeLocked:
        std::fprintf(stderr, "mqx-run: query '%s' lost its record on the node while it waited for admission\n",
                     options.name.c_str());
        withdraw();
        return kInternalExit;
      case AdmissionClient::Admission::TimedOut:
        std::fprintf(stderr,
                     "mqx-run: query '%s' not admitted within %lld s (--timeout, daemon.admission_timeout_s); giving "
                     "up%s: %s\n",
                     options.name.c_str(), static_cast<long long>(admissionTimeout.count()),
                     early > 0 ? " and stopping it (it has not used a device)" : "",
                     client->admissionWaitReason().c_str());
        withdraw();
        return kAdmissionTimeoutExit;
      case AdmissionClient::Admission::DaemonGone:
        // A restart or an upgrade (docs/daemon.md, "Upgrading with queries
        // running"): the query has not run on a device, so it asks the next
        // mqxd, within what is left of its admission wait. A program started
        // before admission is stopped (its record went with mqxd) and
        // started again for the new record.
        if (early > 0) {
          std::fprintf(stderr,
                       "mqx-run: query '%s': stopping its program, which waited for admission by the mqxd "
                       "that went away; it starts again for the next one\n",
                       options.name.c_str());
          withdraw();
        }
        client.reset();
        auto giveUpAt = std::chrono::steady_clock::now() + std::chrono::seconds(options.restartWaitSeconds);
        if (admissionTimeout.count() != 0) giveUpAt = std::min(giveUpAt, start + admissionTimeout);
        if (std::chrono::steady_clock::now() < giveUpAt)
          std::fprintf(
              stderr,
              "mqx-run: query '%s' (pid %d): mqxd went away before admitting it; waiting up to %lld s "
              "for the next mqxd (--daemon-restart-wait)\n",
              options.name.c_str(), static_cast<int>(getpid()),
              static_cast<long long>(
                  std::chrono::ceil<std::chrono::seconds>(giveUpAt - std::chrono::steady_clock::now()).count()));
        while (client == nullptr && std::chrono::steady_clock::now() < giveUpAt) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          client = AdmissionClient::connect(nodeOptions, admissionOptions, options.name);
        }
        if (client == nullptr) {
          std::fprintf(stderr, "mqx-run: mqxd went away before admitting the query, and no mqxd came back within "
                               "the wait (--daemon-restart-wait, --timeout)\n");
          return kNoDaemonExit;
        }
        std::fprintf(stderr, "mqx-run: query '%s' asks the new mqxd (pid %d) for admission\n", options.name.c_str(),
                     static_cast<int>(client->membership().node().daemonPid));
        if (admissionTimeout.count() != 0)
          wait.timeout = std::max(
              std::chrono::seconds(1),
              std::chrono::ceil<std::chrono::seconds>(start + admissionTimeout - std::chrono::steady_clock::now()));
        break;
      }
    }
    const auto admitted = std::chrono::steady_clock::now();
    const auto placed = client->placedDevice();
    if (placed && placed->deviceCount > 1)
      mqx::log(mqx::LogLevel::Info, "mqx-run: query '{}' runs on device {} {}", options.name, placed->index,
               placed->identity);
    const int status = early > 0
                           ? waitForQuery(early)
                           : runQuery(options, client->membership().slot(), placed ? placed->identity : std::string());
    const auto end = std::chrono::steady_clock::now();
    const std::uint64_t observedPeak = client->observedPeak();
    client->finishQuery();
    if (options.stats) {
      using Seconds = std::chrono::duration<double>;
      std::fprintf(stderr,
                   "mqx-run: query '%s': waited %.3f s for admission, ran %.3f s, peak device memory %llu MiB, "
                   "exit %d%s\n",
                   options.name.c_str(), Seconds(admitted - start).count(), Seconds(end - admitted).count(),
                   static_cast<unsigned long long>(observedPeak >> 20), status,
                   placed ? (", device " + placed->identity).c_str() : "");
    }
    return status;
  } catch (const mqx::ipc::UnknownDevice& error) {
    std::fprintf(stderr, "mqx-run: --device: %s\n", error.what());
    return kUsageExit;
  } catch (const mqx::ConfigError& error) {
    std::fprintf(stderr, "mqx-run: %s\n", error.what());
    return kConfigurationExit;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "mqx-run: %s\n", error.what());
    return kInternalExit;
  }
}
