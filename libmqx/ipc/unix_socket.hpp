// What mqx's descriptor-passing sockets share (memory_export.cpp,
// host_block_lender.cpp, host_block_borrower.cpp).
//
// They are abstract unix sockets: a name with no file behind it, so nothing
// is left in the file system when a process dies, and no directory needs to
// be writable or cleaned up. The price is that an abstract name has no
// permissions: any process may bind or connect to it. So each side checks
// the other's user with SO_PEERCRED, which the kernel records at connect()
// and a peer cannot forge, before a descriptor (device or host memory) goes
// either way.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/files.hpp"

namespace mqx::ipc {

struct AbstractAddress {
  sockaddr_un address{};
  socklen_t length = 0; // counts the leading NUL and the name, nothing after it
  [[nodiscard]] const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&address); }
};

// The abstract address `name` (without the leading NUL); nullopt, with errno
// ENAMETOOLONG, when the name is empty or longer than 107 bytes.
[[nodiscard]] std::optional<AbstractAddress> abstractAddress(std::string_view name);

// A blocking send or receive on `socket` fails with EAGAIN after `timeout`
// (0: never).
void setSendTimeout(int socket, std::chrono::milliseconds timeout);
void setReceiveTimeout(int socket, std::chrono::milliseconds timeout);

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;         // 0 where it could not be read
  bool sameUser = false; // read, and this process's effective uid
};
// The connected peer's process and user, as the kernel recorded them.
[[nodiscard]] PeerCredentials peerCredentials(int socket);

// strerror(errno), for messages.
[[nodiscard]] std::string errnoText();

// Descriptors one message carries at the most: far under SCM_RIGHTS's 253.
inline constexpr std::size_t kMaxDescriptorsPerMessage = 16;

// Sends `payload` as one message with `descriptors` attached (SCM_RIGHTS;
// none: no control data). True when all of it went; errno says why not.
[[nodiscard]] bool sendWithDescriptors(int socket, std::span<const std::byte> payload,
                                       std::span<const int> descriptors);

struct ReceivedMessage {
  ssize_t bytes = -1;                      // recvmsg's: -1 with errno set, 0 when the peer closed
  bool payloadCutOff = false;              // MSG_TRUNC: the message was larger than the payload
  bool descriptorsCutOff = false;          // MSG_CTRUNC, or more than were allowed came (those closed)
  std::vector<FileDescriptor> descriptors; // owned: closed unless the caller takes them
};
// Receives one message into `payload` with up to `maxDescriptors` (at most
// kMaxDescriptorsPerMessage) descriptors, close-on-exec. `flags`: more for
// recvmsg (MSG_DONTWAIT). errno is recvmsg's when bytes is -1.
[[nodiscard]] ReceivedMessage receiveWithDescriptors(int socket, std::span<std::byte> payload,
                                                     std::size_t maxDescriptors, int flags = 0);

} // namespace mqx::ipc
