// NodeState: the layout of the node's shared-memory segment (docs/architecture.md
// decision 9). Plain fixed-size data, no pointers, so that every process maps
// it anywhere. Every field but the header, the clock and the published
// regions is written under `lock`, and every update is one
// store that leaves the state valid: a process killed between two stores
// leaves nothing to repair (see RobustMutex). The node's used budget is not
// stored: it is the sum of what live client records hold, so reclaiming a
// dead client's bytes is freeing its record.
//
// A node has one or more devices (docs/daemon.md, "Several GPUs"), listed in
// the header with their budgets; each memory client record draws on one of
// them, and each device's use is the sum of the records on it.
//
// Each memory client also publishes its activity (transfers, evictions, swap
// use) into its record, so that `mqx top`, `mqx status` and mqxd's metrics
// show it (docs/hardening.md, "Client activity"). A record that is freed
// (its client left or died) folds its counters into `retiredActivity` and
// its device's `retiredOnDevice`, and its launches into its query's
// `memberLaunches`: the totals never go back.
//
// The client records, and the node's counters that go with their claims and
// frees (nextArrival, reclaimedBytes, deadClients, retiredActivity), are
// written only by ClientRecords (client_records.hpp), through its named
// transitions; everyone else reads them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include <atomic>
#include <optional>
#include <string>

#include "ipc/published_regions.hpp"
#include "ipc/robust_mutex.hpp"

namespace mqx::ipc {

inline constexpr std::uint32_t kNodeStateMagic = 0x6d71786e; // "mqxn"
inline constexpr std::uint32_t kNodeStateVersion = 8; // 8: NodeState::retiredOnDevice, ClientRecord::memberLaunches
inline constexpr std::uint32_t kMaxClients = 64;
inline constexpr std::size_t kQueryNameBytes = 64;
inline constexpr std::uint32_t kNoSlot = 0xffffffffu;
// The most devices a node lists (a server holds 2 to 8 GPUs; sim.devices
// allows 8). "GPU-" and a 36-character UUID fit in the identity.
inline constexpr std::uint32_t kMaxDevices = 16;
inline constexpr std::size_t kDeviceIdentityBytes = 48;
// A query record not placed on a device yet (waiting, and not pinned to one
// by mqx-run --device).
inline constexpr std::uint32_t kAnyDevice = 0xffffffffu;

enum class ClientState : std::uint32_t {
  Free = 0,
  Waiting = 1, // a query (mqx-run) waiting for admission
  Running = 2, // an admitted query
  Memory = 3,  // a process with a memory manager drawing on the node budget
};

// What a memory client's manager did so far: counters since the client
// joined (readers compute rates from two samples) and its swap buffer's use
// now. Written by the client's own process (NodeMembership, at most every
// 100 ms), under `lock`.
struct ClientActivity {
  std::uint64_t bytesToDevice = 0;    // host -> device transfers
  std::uint64_t bytesToHost = 0;      // device -> host transfers (write-backs and reads)
  std::uint64_t bytesWrittenBack = 0; // dirty bytes saved to the swap buffer on eviction
  std::uint64_t evictions = 0;        // eviction decisions (regions or pages)
  std::uint64_t launches = 0;
  std::uint64_t swapUsedBytes = 0;       // a gauge: swap slots handed out now
  std::uint64_t swapReservedBytes = 0;   // a gauge: swap memory held from the system now
  std::uint64_t evictionNanoseconds = 0; // wall time spent in evictions (adaptive admission's cost per eviction)

  // Adds `other`'s counters (not its gauges) to these.
  void addCounters(const ClientActivity& other) {
    bytesToDevice += other.bytesToDevice;
    bytesToHost += other.bytesToHost;
    bytesWrittenBack += other.bytesWrittenBack;
    evictions += other.evictions;
    launches += other.launches;
    evictionNanoseconds += other.evictionNanoseconds;
  }
};

struct ClientRecord {
  ClientState state = ClientState::Free;
  pid_t pid = 0;
  std::uint64_t arrival = 0;         // admission order (FIFO among postponed)
  std::uint64_t weightedDemand = 0;  // m = Σ tᵢmᵢ / Σ tᵢ (paper §5), bytes
  std::uint64_t peakDemand = 0;      // max mᵢ, bytes
  std::uint64_t budgetHeld = 0;      // device bytes this process has backed
  std::uint64_t observedPeak = 0;    // a query: most bytes its processes held at once
  std::uint64_t heartbeatNs = 0;     // CLOCK_MONOTONIC
  std::uint32_t querySlot = kNoSlot; // a Memory client: the query it runs for
  std::uint32_t blockedOnMemory = 0; // a Memory client waiting for others to free memory
  // A Waiting query: its demand is final and it asks to be admitted. Until
  // then (between joining and asking) admission leaves it alone, or it would
  // be admitted with no demand at all.
  std::uint32_t admissionRequested = 0;
  // The node device (an index into NodeState::devices): a memory client's,
  // the one it draws on; a query's, the one mqxd placed it on (set when it
  // is admitted), or the one it asked for (mqx-run --device), else
  // kAnyDevice while it waits.
  std::uint32_t device = kAnyDevice;
  char name[kQueryNameBytes] = {};
  ClientActivity activity; // a Memory client's, published by its process
  // A Waiting query started before its admission (mqx-run,
  // daemon.start_before_admission): mqxd places it on a device as soon as it
  // asks, before admitting it, so that its program is shown the one device it
  // will run on from its first instruction. A program may count devices
  // before its first driver call (PyTorch asks NVML) and must not see a
  // device it will not get (docs/daemon.md, "Starting before admission").
  std::uint32_t placeOnArrival = 0;
  // A query: the launches of its memory clients that left, so that what
  // each published last is counted although its record is gone (mqxd learns
  // a query's launches per run from it: daemon/query_work.hpp). Kept after
  // the query's own record is freed, until the slot is claimed again.
  std::uint64_t memberLaunches = 0;
};

// One device of the node: its identity (a GPU's UUID as `nvidia-smi -L`
// prints it, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", or a simulated
// device's name "sim-<n>"), NUL-terminated, and its budget in bytes.
struct DeviceEntry {
  char identity[kDeviceIdentityBytes] = {};
  std::uint64_t capacity = 0;
};

struct NodeState {
  // The header: written once by mqxd before anyone may use the segment and
  // sealed with `headerChecksum`, so that a segment overwritten with
  // anything else is recognised before its lock is touched
  // (docs/hardening.md, "Faults and bad inputs tried").
  std::uint32_t magic = kNodeStateMagic;
  std::uint32_t version = kNodeStateVersion;
  std::uint64_t layoutBytes = 0; // sizeof(NodeState) of the creator
  pid_t daemonPid = 0;
  std::uint32_t deviceCount = 0; // 1..kMaxDevices
  DeviceEntry devices[kMaxDevices];
  std::uint64_t headerChecksum = 0; // headerChecksumOf(*this)
  RobustMutex lock;
  std::uint64_t nextArrival = 1;
  std::uint64_t reclaimedBytes = 0; // taken back from dead clients, total
  std::uint32_t deadClients = 0;
  std::uint64_t evictionRequestsServed = 0; // cross-process evictions that freed something
  std::uint64_t bytesEvictedForOthers = 0;
  ClientActivity retiredActivity; // the counters of the records freed so far (gauges zero)
  // The same, per device: a client's last published counters (those of its
  // final second, published as it leaves) are seen only here, so mqxd's
  // per-device counters (adaptive admission) add these to the live records'.
  ClientActivity retiredOnDevice[kMaxDevices];
  ClientRecord clients[kMaxClients];
  // Not under `lock`: the node-wide logical clock of region uses (one
  // fetch_add per launch), so that last uses of different processes compare,
  // and each client's published regions (seqlocks, written by the owner).
  std::atomic<std::uint64_t> logicalClock{0};
  PublishedRegions published[kMaxClients];

  // The bytes held on `device`, or on every device (kAnyDevice). Call with
  // `lock` held.
  std::uint64_t usedBytes(std::uint32_t device = kAnyDevice) const {
    std::uint64_t used = 0;
    for (const auto& client : clients)
      if (client.state != ClientState::Free && (device == kAnyDevice || client.device == device))
        used += client.budgetHeld;
    return used;
  }
  // The budget of `device`, 0 for an index the node does not have; of every
  // device together for kAnyDevice. The header never changes: no lock.
  std::uint64_t capacityOf(std::uint32_t device = kAnyDevice) const {
    std::uint64_t capacity = 0;
    for (std::uint32_t i = 0; i < deviceCount && i < kMaxDevices; ++i)
      if (device == kAnyDevice || device == i) capacity += devices[i].capacity;
    return capacity;
  }
  // The identity of `device` ("" for an index the node does not have).
  std::string identityOf(std::uint32_t device) const;
};

// FNV-1a over the header's fields (magic, version, layoutBytes, daemonPid,
// the device table).
std::uint64_t headerChecksumOf(const NodeState& node);
// Fills in the header's checksum: the last store of the segment's creator.
void sealHeader(NodeState& node);
// Why the segment of `mappedBytes` whose start is `node` is not a node
// state of this version, or empty when it is one: a one-line reason.
std::string headerDamage(const NodeState& node, std::size_t mappedBytes);
// Whether `node` is a node state, but of another mqx: its magic is ours and
// its version or layout is not (a node of another mqx, not garbage).
bool ofAnotherVersion(const NodeState& node, std::size_t mappedBytes);

// The index of the node's device that `name` names: its identity (a GPU
// UUID compared without regard to case, "sim-<n>") or its decimal index;
// "" names the first device. nullopt when the node has no such device.
std::optional<std::uint32_t> findDevice(const NodeState& node, const std::string& name);
// The node's devices in one line: "0 sim-0 (32 MiB), 1 sim-1 (32 MiB)".
std::string listDevices(const NodeState& node);

std::uint64_t monotonicNanoseconds();
// Whether `pid` is a live process (a zombie counts as dead: its memory is
// gone, only its parent has not reaped it yet).
bool processAlive(pid_t pid);
// Whether `pid` (a process or thread id) is stopped: SIGSTOP, SIGTSTP or a
// tracer ('T' or 't' in /proc/<pid>/stat). A stopped process holds its
// device memory and serves no eviction request until SIGCONT.
bool processStopped(pid_t pid);
// The process that thread `thread` belongs to (Tgid in /proc/<thread>/status),
// or `thread` itself when that cannot be read.
pid_t processOfThread(pid_t thread);

} // namespace mqx::ipc
