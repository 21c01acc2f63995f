#include "ipc/unix_socket.hpp"

#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace mqx::ipc {
namespace {

void setTimeout(int socket, int option, std::chrono::milliseconds timeout) {
  timeval value{};
  value.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  value.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  // Fails only for a descriptor that is no socket: the send or receive that
  // follows says so.
  ::setsockopt(socket, SOL_SOCKET, option, &value, sizeof value);
}

// Room for the most descriptors a message carries.
constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * kMaxDescriptorsPerMessage);

} // namespace

std::optional<AbstractAddress> abstractAddress(std::string_view name) {
  AbstractAddress made;
  made.address.sun_family = AF_UNIX;
  if (name.empty() || name.size() > sizeof made.address.sun_path - 1) {
    errno = ENAMETOOLONG;
    return std::nullopt;
  }
  std::memcpy(made.address.sun_path + 1, name.data(), name.size());
  made.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return made;
}

void setSendTimeout(int socket, std::chrono::milliseconds timeout) { setTimeout(socket, SO_SNDTIMEO, timeout); }
void setReceiveTimeout(int socket, std::chrono::milliseconds timeout) { setTimeout(socket, SO_RCVTIMEO, timeout); }

PeerCredentials peerCredentials(int socket) {
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) return {};
  return {peer.pid, peer.uid, peer.uid == ::geteuid()};
}

std::string errnoText() { return std::strerror(errno); }

bool sendWithDescriptors(int socket, std::span<const std::byte> payload, std::span<const int> descriptors) {
  if (descriptors.size() > kMaxDescriptorsPerMessage) {
    errno = EINVAL;
    return false;
  }
  iovec data{const_cast<std::byte*>(payload.data()), payload.size()};
  alignas(cmsghdr) char control[kControlBytes] = {};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  if (!descriptors.empty()) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(sizeof(int) * descriptors.size());
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * descriptors.size());
    std::memcpy(CMSG_DATA(rights), descriptors.data(), sizeof(int) * descriptors.size());
  }
  return ::sendmsg(socket, &header, MSG_NOSIGNAL) == static_cast<ssize_t>(payload.size());
}

ReceivedMessage receiveWithDescriptors(int socket, std::span<std::byte> payload, std::size_t maxDescriptors,
                                       int flags) {
  if (maxDescriptors > kMaxDescriptorsPerMessage) maxDescriptors = kMaxDescriptorsPerMessage;
  iovec data{payload.data(), payload.size()};
  alignas(cmsghdr) char control[kControlBytes] = {};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = CMSG_SPACE(sizeof(int) * maxDescriptors);
  ReceivedMessage received;
  received.bytes = ::recvmsg(socket, &header, flags | MSG_CMSG_CLOEXEC);
  if (received.bytes < 0) return received;
  received.payloadCutOff = (header.msg_flags & MSG_TRUNC) != 0;
  received.descriptorsCutOff = (header.msg_flags & MSG_CTRUNC) != 0;
  // Every descriptor that came is owned from here, so that none leaks;
  // CMSG_SPACE's padding may fit more than were allowed, and those close.
  for (cmsghdr* part = CMSG_FIRSTHDR(&header); part != nullptr; part = CMSG_NXTHDR(&header, part)) {
    if (part->cmsg_level != SOL_SOCKET || part->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (part->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int descriptor = -1;
      std::memcpy(&descriptor, CMSG_DATA(part) + i * sizeof(int), sizeof descriptor);
      received.descriptors.emplace_back(descriptor);
    }
  }
  if (received.descriptors.size() > maxDescriptors) {
    received.descriptors.resize(maxDescriptors);
    received.descriptorsCutOff = true;
  }
  return received;
}

} // namespace mqx::ipc
