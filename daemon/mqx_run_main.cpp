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
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "config/config.hpp"
#include "embedded/runtime_options.hpp"
#include "ipc/admission_client.hpp"
#include "mqx/version.hpp"
#include "query_name.hpp"
#include "query_plan.hpp"
#include "query_process.hpp"
#include "run_admission.hpp"

namespace {

using mqx::daemon::QueryProcess;
using mqx::daemon::RunAdmission;
using mqx::daemon::RunAdmissionSettings;

constexpr int kNoDaemonExit = 69;         // EX_UNAVAILABLE
constexpr int kAdmissionTimeoutExit = 75; // EX_TEMPFAIL: not admitted in time, try again later
constexpr int kUsageExit = 2;
// mqx-run's own failures, apart from any status the query may return itself
// (docs/daemon.md, "Exit status"): a bad configuration or plan file, and a
// failure of mqx-run (fork, the node lost under it).
constexpr int kConfigurationExit = 78; // EX_CONFIG
constexpr int kInternalExit = 70;      // EX_SOFTWARE

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

// What the admission needs of the options and the configuration: the
// query's name and demand (its plan's, when --plan names one; ConfigError
// for a bad plan), the node, and how long to wait.
RunAdmissionSettings settingsOf(Options& options, const mqx::Config& config) {
  RunAdmissionSettings settings;
  if (!options.plan.empty()) {
    const auto plan = mqx::daemon::QueryPlan::load(options.plan);
    settings.weightedDemand = plan.weightedDemand();
    settings.peakDemand = plan.peakDemand();
    if (options.name.empty()) options.name = plan.name;
  }
  if (options.name.empty()) // the command is null-terminated for execvp
    options.name = mqx::daemon::defaultQueryName({options.command.begin(), options.command.end() - 1});
  settings.name = options.name;
  settings.node = mqx::embedded::nodeOptions(config);
  settings.node.device = options.device;
  settings.admission = mqx::embedded::admissionOptions(config);
  settings.timeout = std::chrono::seconds(options.timeoutSeconds.value_or(config.admissionTimeoutSeconds));
  settings.restartWait = std::chrono::seconds(options.restartWaitSeconds);
  settings.startBeforeAdmission = options.startBeforeAdmission.value_or(config.startBeforeAdmission);
  return settings;
}

// The admitted query runs (or, started before admission, goes on) on the
// device mqxd placed it on; its end frees the record with what it held at
// most, for learned demand. The query's exit status.
int runAdmitted(RunAdmission& admission, QueryProcess& program, const Options& options) {
  mqx::ipc::AdmissionClient& client = admission.client();
  const auto admitted = std::chrono::steady_clock::now();
  const auto placed = client.placedDevice();
  if (placed && placed->deviceCount > 1)
    mqx::log(mqx::LogLevel::Info, "mqx-run: query '{}' runs on device {} {}", options.name, placed->index,
             placed->identity);
  int status = admission.early() > 0
                   ? program.wait(admission.early())
                   : program.run(client.membership().slot(), placed ? placed->identity : std::string());
  if (status < 0) status = kInternalExit;
  const auto end = std::chrono::steady_clock::now();
  const std::uint64_t observedPeak = client.observedPeak();
  client.finishQuery();
  if (options.stats) {
    using Seconds = std::chrono::duration<double>;
    std::fprintf(stderr,
                 "mqx-run: query '%s': waited %.3f s for admission, ran %.3f s, peak device memory %llu MiB, "
                 "exit %d%s\n",
                 options.name.c_str(), Seconds(admitted - admission.waitBegan()).count(),
                 Seconds(end - admitted).count(), static_cast<unsigned long long>(observedPeak >> 20), status,
                 placed ? (", device " + placed->identity).c_str() : "");
  }
  return status;
}

// mqx-run's exit status once the admission reached `outcome`.
int conclude(RunAdmission::State outcome, RunAdmission& admission, QueryProcess& program, const Options& options,
             const mqx::Config& config) {
  using State = RunAdmission::State;
  switch (outcome) {
  case State::Admitted: return runAdmitted(admission, program, options);
  case State::NoDaemon: {
    if (options.allowNoDaemon || config.allowNoDaemon) {
      const int status = program.run(mqx::ipc::kNoSlot, options.device); // a device named by identity still holds
      return status < 0 ? kInternalExit : status;
    }
    std::fprintf(stderr, "mqx-run: no mqxd is running for this user%s (start mqxd, or pass --allow-no-daemon)\n",
                 config.daemonInstance.empty() ? "" : (" and instance " + config.daemonInstance).c_str());
    return kNoDaemonExit;
  }
  case State::EndedBeforeAdmission:
    if (options.stats)
      std::fprintf(stderr, "mqx-run: query '%s' ended before it was admitted, exit %d\n", options.name.c_str(),
                   admission.endedStatus());
    return admission.endedStatus();
  case State::DaemonNotBack: return kNoDaemonExit;
  case State::TimedOut: return kAdmissionTimeoutExit;
  case State::RecordLost:
  case State::StartFailed:
  default: return kInternalExit;
  }
}

} // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, &options)) {
    usage(stderr);
    return kUsageExit;
  }
  try {
    const mqx::Config config = mqx::loadConfig();
    mqx::setLogLevel(config.logLevel);
    RunAdmissionSettings settings = settingsOf(options, config);
    QueryProcess program(options.command, options.name);
    RunAdmission admission(std::move(settings), program);
    return conclude(admission.run(), admission, program, options, config);
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
