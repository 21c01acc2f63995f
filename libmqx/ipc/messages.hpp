// The messages of mqx's POSIX message queues: one fixed-size struct for every
// kind, validated on receipt (size, magic, version, kind, slot, name): a
// queue is writable by any process of the user, so nothing in a message is
// trusted until checked.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ipc/node_state.hpp"
#include "kernelopt/device_attributes.hpp"

namespace mqx::ipc {

inline constexpr std::uint32_t kMessageMagic = 0x6d71786d; // "mqxm"
inline constexpr std::uint16_t kMessageVersion = 3;        // 3: FootprintUpdate; 2: LaunchTuningFields::nodeDevice

enum class MessageKind : std::uint16_t {
  // To mqxd.
  AdmissionRequest = 1,    // slot (Waiting) asks to run
  DemandUpdate = 2,        // slot's weighted/peak demand changed: declared (plan, advice API)
  QueryFinished = 3,       // slot's query ended; observedPeak in `bytes`
  Wake = 4,                // no content: look at the segment again (and shutdown)
  LaunchTuningRequest = 5, // launch parameters for a resizable kernel (`launch`; ticket in `sequence`)
  LaunchFinished = 6,      // the kernel of ticket `sequence` completed
  FootprintUpdate = 7,     // slot's weighted/peak demand as its launches referenced it (nothing declared)
  // To a client.
  Admitted = 16,         // the query in `slot` may start
  EvictRequest = 17,     // free `bytes` (`region` first); reply to `pid`'s reply queue
  EvictAck = 18,         // `bytes` were freed for request `sequence`
  LaunchParameters = 19, // the answer to LaunchTuningRequest `sequence` (`launch`)
};

// A resizable kernel's launch as the launch service sees it
// (docs/kernelopt.md, "Launch service"): its resources and device in the
// request; the block size and grid to launch with in the reply.
struct LaunchTuningFields {
  std::uint64_t threads = 0;              // request: threads its grid would launch
  std::uint32_t registersPerThread = 0;   // request
  std::uint32_t sharedMemoryPerBlock = 0; // request: static plus dynamic bytes
  std::uint32_t maxThreadsPerBlock = 0;   // request: the kernel's own limit
  std::uint32_t ownThreadsPerBlock = 0;   // request: the block size it asked for
  kernelopt::DeviceAttributes device{};   // request
  std::uint32_t nodeDevice = 0;           // request: the node device (index) it runs on; only kernels of one compete
  std::uint32_t threadsPerBlock = 0;      // reply; 0: keep the launch's own parameters
  std::uint32_t gridBlocks = 0;           // reply
  std::uint32_t kernelsSolved = 0;        // reply: kernels solved together (this one included)
};

struct Message {
  std::uint32_t magic = kMessageMagic;
  std::uint16_t version = kMessageVersion;
  MessageKind kind = MessageKind::Wake;
  pid_t pid = 0;                // the sender
  std::uint32_t slot = kNoSlot; // the sender's client record
  std::uint64_t sequence = 0;
  std::uint64_t bytes = 0;
  std::uint64_t weightedDemand = 0;
  std::uint64_t peakDemand = 0;
  std::uint64_t region = 0; // EvictRequest: the owner's region to evict (0: its own choice)
  char name[kQueryNameBytes] = {};
  LaunchTuningFields launch{};

  static Message of(MessageKind kind, pid_t pid, std::uint32_t slot);
  void setName(const std::string& text);
};

// Whether `received` bytes in `message` form a valid message. `why` says
// what is wrong when not.
bool validMessage(const Message& message, std::size_t received, std::string* why);

} // namespace mqx::ipc
