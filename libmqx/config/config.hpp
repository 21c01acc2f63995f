// mqx configuration: one struct, loaded from TOML and overridden by the
// environment. configs/default.toml documents every key; an unknown key, a
// wrong type or an out-of-range value is a ConfigError naming the key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "config/config_choices.hpp"

namespace mqx {

struct Config {
  // [memory]
  std::size_t pageSize = 64 * 1024 * 1024; // configs/default.toml says why
  std::size_t deviceMemoryLimit = 0;       // 0: what the device has
  std::size_t swapBufferLimit = 0;         // 0: half of the host's physical memory
  bool pinnedSwap = true;
  bool borrowHostBlocks = true;          // take host blocks from mqxd's pool first (daemon.host_block_pool)
  double reportedOversubscription = 1.0; // cuMemGetInfo's total: the budget times this (configs/default.toml)
  bool manageProgramVmm = true;          // the program's own cuMemCreate/cuMemMap become mqx regions
  // [policy]
  ReplacementKind replacement = ReplacementKind::Cdr;
  double latencyFactor = 0.01;
  EvictionGranularity evictionGranularity = EvictionGranularity::Region;
  std::uint64_t randomSeed = 0;
  double writeBackAhead = 0.02;
  std::uint32_t writeBackAheadQuietOperations = 64;
  std::uint32_t sparePages = 1;
  bool stagedWriteBack = true;
  // [optimizations]
  bool lazyTransfer = true;
  bool copyOnWrite = true;
  std::size_t cowMinBytes = 256 * 1024;
  ReferenceDetection referenceDetection = ReferenceDetection::Auto;
  bool accessAdvice = true;
  bool pageCoherence = true;
  bool pointersInParameters = false;
  // [backend]
  BackendKind backend = BackendKind::Auto;
  unsigned fenceCoalesceMicroseconds = 20;
  // [sim]
  std::size_t simCapacity = std::size_t{1} << 30;
  std::size_t simGranularity = 2 * 1024 * 1024;
  double simCopyBandwidthGBps = 25.0;
  double simDeviceBandwidthGBps = 1000.0;
  bool simRealtime = false;
  unsigned simDevices = 1;           // mqxd: the node's simulated devices sim-0 .. sim-<n-1>, each of sim.capacity
  std::string simDevice;             // a sim process: the node device it draws on ("": the node's first)
  std::string simLinkName;           // realtime: the node-wide copy link its processes share ("": each its own)
  double simMapCostMicroseconds = 0; // realtime: what each map and unmap takes
  // [daemon] (mqxd, mqx-run and the processes of a node: docs/daemon.md)
  std::string daemonInstance; // suffix of the node's IPC names
  // daemon.host_block_pool: the pinned host memory mqxd lends (0: none;
  // empty, "auto": 8 GiB, at most a quarter of the host's memory, on a GPU
  // node, made in the background; none on the simulated device).
  std::optional<std::size_t> hostBlockPool;
  std::size_t daemonCapacity = 0; // each device's budget; 0: memory.device_memory_limit, else by device
  AdmissionKind admission = AdmissionKind::Adaptive;
  PlacementKind placement = PlacementKind::Demand; // which device a query runs on
  unsigned admissionFixN = 2;                      // FIX-n: at most n queries at once
  // Adaptive admission (docs/daemon.md, "Adaptive admission").
  unsigned adaptiveWindowMilliseconds = 2000; // one control decision per window
  unsigned adaptiveInitialLimit = 2;          // queries per device before anything is measured
  unsigned adaptiveMaxLimit = 16;
  double adaptiveEvictionShare = 0.08;       // eviction seconds per second of the device above which the limit halves
  unsigned adaptiveEvictionWindows = 1;      // ... in this many windows in a row
  double adaptiveGrowthEvictionShare = 0.01; // ... above which the limit does not grow
  double adaptiveGain = 0.1;                 // the throughput gain a step up must bring to be kept
  double adaptiveGuessedWorkShare = 1.0;     // the most of a window's work that may be guessed for it to measure
  unsigned adaptivePagingSettleMilliseconds = 2000; // after a drop, the levels below count no evictions for this long
  unsigned adaptiveLevelEvidenceMilliseconds = 0;   // a level is lowered from on its own share once it ran this long
  double adaptivePeakOvercommit = 0; // a query starts beside others where all their peaks fit this many capacities
  // A query that declares nothing counts as its whole device until what its
  // processes hold has not grown for this long (docs/daemon.md).
  unsigned undeclaredSettleMilliseconds = 2000;
  unsigned livenessIntervalMilliseconds = 100;
  unsigned evictionTimeoutMilliseconds = 2000;
  unsigned demandReportIntervalMilliseconds = 100; // a query's observed demand goes to mqxd at most this often
  std::string demandStateFile;                     // learned demands; "": $HOME/.mqx-demand
  bool allowNoDaemon = false;                      // mqx-run without mqxd runs the query alone
  unsigned admissionTimeoutSeconds = 3600;         // mqx-run gives up waiting for admission after this; 0: no limit
  bool startBeforeAdmission = true; // mqx-run starts the query at once; it waits for admission at its first CUDA call
  // [daemon] MPS (docs/kernelopt.md, "MPS"): off, detect a running control
  // daemon, or manage (start one when none runs, stop it at shutdown).
  MpsMode mps = MpsMode::Off;
  std::string mpsControl = "nvidia-cuda-mps-control";
  std::string mpsPipeDirectory; // "": $CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps
  std::string mpsLogDirectory;  // "": $CUDA_MPS_LOG_DIRECTORY, else the control daemon's default
  // [kernelopt] (the launch service: docs/kernelopt.md, "Launch service")
  std::vector<std::string> resizableKernels; // kernel names (as cuFuncGetName reports them)
  unsigned launchReplyTimeoutMilliseconds = 20;
  unsigned launchLeaseMilliseconds = 2000;
  // [daemon] metrics (docs/hardening.md, "Metrics"): Prometheus text format.
  std::string metricsFile;  // "": none; else rewritten atomically every metrics_interval_ms
  unsigned metricsPort = 0; // 0: none; else served on 127.0.0.1:<port>
  // Per-client series labelled with the pid and the query's name: every
  // local user can read the port, so off unless asked for.
  bool metricsClientIdentities = false;
  unsigned metricsIntervalMilliseconds = 1000;
  // [trace] (docs/hardening.md, "Trace"): Chrome trace-event JSON per process.
  std::string traceFile;                 // "": off; "%p" becomes the pid
  std::size_t traceBufferEvents = 16384; // events kept in memory before they are written
  // [log]
  LogLevel logLevel = LogLevel::Warn;
};

class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Parses TOML text. `origin` names the source in error messages.
Config parseConfig(const std::string& tomlText, const std::string& origin = "config");

// Applies MQX_<SECTION>_<KEY> overrides from `environment` to `config`.
void applyEnvironment(Config& config, const std::map<std::string, std::string>& environment);

// The process environment as a map (for applyEnvironment).
std::map<std::string, std::string> processEnvironment();

// Loads the configuration the way a process does at start: the file named by
// MQX_CONFIG (if set), else the one installed with mqx (installedConfigFile:
// PREFIX/etc/mqx/mqx.toml, /etc/mqx/mqx.toml for /usr; none in a build
// tree), then environment overrides. Throws ConfigError.
Config loadConfig();

// The same from `environment`, with the file `path` in place of MQX_CONFIG
// when given (Python's mqx.load_config), and `installedFile` read when
// neither names one. Warns once per process about each MQX_* variable that
// names no key (unknownVariables).
Config loadConfig(const std::map<std::string, std::string>& environment,
                  const std::optional<std::string>& path = std::nullopt,
                  const std::optional<std::string>& installedFile = std::nullopt);

// The largest configuration file mqx reads. The default file is about 8 KiB;
// the bound keeps a mistaken MQX_CONFIG (/dev/zero, a log file) from reading
// without end.
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;

// The text of the configuration file `path`, which `key` (MQX_CONFIG, path)
// named. Throws ConfigError "mqx config: <key>: ..." naming the path when it
// is missing, not a regular file (a directory, a device, a pipe) or larger
// than kMaxConfigFileBytes.
std::string readConfigFile(const std::string& path, const std::string& key);

// The MQX_* variables of `environment` that name no configuration key and are
// not one of the project's other variables (MQX_CONFIG, MQX_BUILD_DIR, ...:
// config.cpp lists them next to the key table): most likely misspelled keys
// (MQX_DEAMON_CAPACITY). A variable whose section is right but key wrong
// (MQX_DAEMON_CAPACTIY) is not here: applyEnvironment refuses it.
std::vector<std::string> unknownVariables(const std::map<std::string, std::string>& environment);

// Warns about each of unknownVariables(environment) once per process
// (libmqx.so loads its configuration from the hooks and the advice API),
// naming the closest key variable, when `level` lets warnings through.
void warnAboutUnknownVariables(const std::map<std::string, std::string>& environment, LogLevel level);

// TOML text mqx accepts: ASCII only. Throws ConfigError "<where>:line:column:
// ..." at the first other byte. toml++ 3.3 (Debian 12) reaches
// __builtin_unreachable on some non-ASCII characters (U+00A1..U+0499 among
// them) where it looks for whitespace: undefined behaviour, found by
// tests/fuzz/config_fuzzer. Every key and value mqx reads is ASCII.
void requireAsciiToml(const std::string& tomlText, const std::string& where);

// Parses "8MiB", "512KiB", "2GiB", "4096" into bytes. Throws ConfigError naming
// `key`.
std::size_t parseSize(const std::string& text, const std::string& key);

} // namespace mqx
