#include "ipc/memory_export.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "common/log.hpp"
#include "ipc/unix_socket.hpp"

namespace mqx::ipc {
namespace {

constexpr std::array<char, 8> kMagic{'m', 'q', 'x', 'i', 'p', 'c', '1', '\0'};

// The wire: a request, a reply, then one message per piece carrying its
// descriptor. SOCK_SEQPACKET keeps each message whole.
struct Request {
  std::array<char, 8> magic = kMagic;
  std::uint64_t id = 0;
  std::array<std::uint8_t, 16> token{};
};
enum class ReplyStatus : std::uint32_t { Ok = 0, Unknown = 1 };
struct Reply {
  ReplyStatus status = ReplyStatus::Unknown;
  std::uint32_t pieces = 0;
  std::uint64_t mappedBytes = 0;
};
struct PieceMessage {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};
// A sane bound on what one export may send (a 64 GiB allocation of 2 MiB
// pages is 32,768).
constexpr std::uint32_t kMaxPieces = 1u << 20;

// The abstract socket of process `pid` (unix_socket.hpp): no file, gone with
// its last descriptor.
std::string socketNameOf(std::uint32_t pid) { return "mqx-export-" + std::to_string(pid); }

bool sendPiece(int socket, const SharedPiece& piece) {
  const PieceMessage message{piece.offset, piece.bytes};
  const int descriptor = piece.descriptor.get();
  return sendWithDescriptors(socket, std::as_bytes(std::span(&message, 1)), {&descriptor, 1});
}

} // namespace

void ExportTicket::encode(std::byte* handle) const {
  std::memset(handle, 0, kHandleBytes);
  std::byte* at = handle;
  auto put = [&](const void* value, std::size_t bytes) {
    std::memcpy(at, value, bytes);
    at += bytes;
  };
  put(kMagic.data(), kMagic.size());
  put(&exporter, sizeof exporter);
  put(&id, sizeof id);
  put(token.data(), token.size());
  put(&size, sizeof size);
  put(&mappedBytes, sizeof mappedBytes);
}

std::optional<ExportTicket> ExportTicket::decode(const std::byte* handle) {
  if (std::memcmp(handle, kMagic.data(), kMagic.size()) != 0) return std::nullopt;
  ExportTicket ticket;
  const std::byte* at = handle + kMagic.size();
  auto get = [&](void* value, std::size_t bytes) {
    std::memcpy(value, at, bytes);
    at += bytes;
  };
  get(&ticket.exporter, sizeof ticket.exporter);
  get(&ticket.id, sizeof ticket.id);
  get(ticket.token.data(), ticket.token.size());
  get(&ticket.size, sizeof ticket.size);
  get(&ticket.mappedBytes, sizeof ticket.mappedBytes);
  return ticket;
}

MemoryExportServer::~MemoryExportServer() {
  if (!thread_.joinable()) return;
  if (servingFor_ == ::getpid()) {
    const std::uint64_t one = 1;
    if (::write(wake_.get(), &one, sizeof one) == sizeof one) {
      thread_.join();
      return;
    }
  }
  thread_.detach(); // a forked child has no such thread running: nothing to join
}

Status MemoryExportServer::startLocked(std::string* error) {
  if (thread_.joinable() && servingFor_ == ::getpid()) return Status::Success;
  if (thread_.joinable()) thread_.detach(); // inherited across fork: not running here
  FileDescriptor listening(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  FileDescriptor wake(::eventfd(0, EFD_CLOEXEC));
  if (!listening.valid() || !wake.valid()) {
    *error = "cannot create the export socket: " + errnoText();
    return Status::OutOfMemory;
  }
  const std::string name = socketNameOf(static_cast<std::uint32_t>(::getpid()));
  const std::optional<AbstractAddress> address = abstractAddress(name);
  if (!address || ::bind(listening.get(), address->get(), address->length) != 0 || ::listen(listening.get(), 16) != 0) {
    *error = "cannot listen on the export socket @" + name + ": " + errnoText();
    return Status::Unknown;
  }
  listening_ = std::move(listening);
  wake_ = std::move(wake);
  servingFor_ = ::getpid();
  thread_ = std::thread([this] { serve(); });
  return Status::Success;
}

Status MemoryExportServer::offer(SharedAllocation allocation, ExportTicket* ticket, std::string* error) {
  if (ticket == nullptr || error == nullptr || allocation.pieces.empty()) return Status::InvalidValue;
  std::lock_guard lock(mutex_);
  MQX_TRY(startLocked(error));
  auto known = exports_.find(allocation.base);
  if (known != exports_.end()) {
    *ticket = known->second.ticket;
    return Status::Success; // the new descriptors close here: the first ones serve
  }
  ExportTicket made;
  made.exporter = static_cast<std::uint32_t>(::getpid());
  made.id = nextId_++;
  if (::getrandom(made.token.data(), made.token.size(), 0) != static_cast<ssize_t>(made.token.size())) {
    *error = "no random bytes for the export's token: " + errnoText();
    return Status::Unknown;
  }
  made.size = allocation.size;
  made.mappedBytes = allocation.mappedBytes;
  const DevicePtr base = allocation.base;
  exports_.emplace(base, Export{made, std::move(allocation)});
  *ticket = made;
  return Status::Success;
}

void MemoryExportServer::withdraw(DevicePtr base) {
  std::lock_guard lock(mutex_);
  exports_.erase(base);
}

void MemoryExportServer::serve() {
  for (;;) {
    pollfd waiting[2] = {{listening_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(waiting, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log(LogLevel::Error, "memory exports: poll failed ({}); no more imports are served", errnoText());
      return;
    }
    if (waiting[1].revents != 0) return;
    FileDescriptor connection(::accept4(listening_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection.valid()) answer(connection.get());
  }
}

void MemoryExportServer::answer(int connection) {
  // An importer that stops reading holds this thread up for at most this.
  setSendTimeout(connection, std::chrono::seconds(5));
  setReceiveTimeout(connection, std::chrono::seconds(5));
  const PeerCredentials peer = peerCredentials(connection);
  if (!peer.sameUser) {
    log(LogLevel::Warn, "memory exports: refused a connection from uid {} (only uid {} is served)", peer.uid,
        ::geteuid());
    return;
  }
  Request request;
  if (::recv(connection, &request, sizeof request, 0) != static_cast<ssize_t>(sizeof request) ||
      request.magic != kMagic)
    return;
  // Copies of the descriptors, taken under the lock, so that a slow
  // importer never holds up offer() and withdraw().
  Reply reply;
  std::vector<SharedPiece> sending;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [base, entry] : exports_) {
      if (entry.ticket.id != request.id || entry.ticket.token != request.token) continue;
      for (const SharedPiece& piece : entry.allocation.pieces)
        sending.push_back(
            {piece.offset, piece.bytes, FileDescriptor(::fcntl(piece.descriptor.get(), F_DUPFD_CLOEXEC, 0))});
      reply.status = ReplyStatus::Ok;
      reply.pieces = static_cast<std::uint32_t>(sending.size());
      reply.mappedBytes = entry.allocation.mappedBytes;
    }
  }
  for (const SharedPiece& piece : sending)
    if (!piece.descriptor.valid()) reply = Reply{}; // out of descriptors: the importer hears of an unknown export
  if (::send(connection, &reply, sizeof reply, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof reply) ||
      reply.status != ReplyStatus::Ok)
    return;
  for (const SharedPiece& piece : sending)
    if (!sendPiece(connection, piece)) {
      log(LogLevel::Warn, "memory exports: sending export {} to process {} failed: {}", request.id, peer.pid,
          errnoText());
      return;
    }
}

Status receiveExport(const ExportTicket& ticket, std::chrono::milliseconds timeout, std::vector<SharedPiece>* pieces,
                     std::string* error) {
  if (pieces == nullptr || error == nullptr) return Status::InvalidValue;
  const std::string exporter = "process " + std::to_string(ticket.exporter);
  FileDescriptor connection(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!connection.valid()) {
    *error = "cannot create a socket: " + errnoText();
    return Status::OutOfMemory;
  }
  setSendTimeout(connection.get(), timeout);
  setReceiveTimeout(connection.get(), timeout);
  const std::optional<AbstractAddress> address = abstractAddress(socketNameOf(ticket.exporter));
  if (!address || ::connect(connection.get(), address->get(), address->length) != 0) {
    *error = exporter + " serves no exports (" + errnoText() + "): it has ended, or the handle is stale";
    return Status::InvalidValue;
  }
  Request request;
  request.id = ticket.id;
  request.token = ticket.token;
  Reply reply;
  if (::send(connection.get(), &request, sizeof request, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof request) ||
      ::recv(connection.get(), &reply, sizeof reply, 0) != static_cast<ssize_t>(sizeof reply)) {
    *error = "waiting for " + exporter + " to answer for export " + std::to_string(ticket.id) + ": " +
             (errno == EAGAIN ? "no answer within " + std::to_string(timeout.count()) + " ms" : errnoText());
    return Status::Unknown;
  }
  if (reply.status != ReplyStatus::Ok) {
    *error = exporter + " has no export " + std::to_string(ticket.id) + " with that token (freed, or never made)";
    return Status::InvalidValue;
  }
  if (reply.pieces == 0 || reply.pieces > kMaxPieces || reply.mappedBytes != ticket.mappedBytes) {
    *error = exporter + " answered an export of " + std::to_string(reply.pieces) + " pieces and " +
             std::to_string(reply.mappedBytes) + " bytes, which the handle does not describe";
    return Status::InvalidValue;
  }
  std::vector<SharedPiece> received;
  for (std::uint32_t i = 0; i < reply.pieces; ++i) {
    PieceMessage message;
    ReceivedMessage got = receiveWithDescriptors(connection.get(), std::as_writable_bytes(std::span(&message, 1)), 1);
    if (got.bytes != static_cast<ssize_t>(sizeof message) || got.payloadCutOff || got.descriptorsCutOff ||
        got.descriptors.size() != 1) {
      std::string why = "no descriptor came";
      if (got.bytes < 0)
        why = errno == EAGAIN ? "nothing within " + std::to_string(timeout.count()) + " ms" : errnoText();
      else if (!got.descriptors.empty())
        why = "a message of " + std::to_string(got.bytes) + " bytes with " + std::to_string(got.descriptors.size()) +
              " descriptors, not a piece";
      *error = "receiving piece " + std::to_string(i) + " of " + std::to_string(reply.pieces) + " of export " +
               std::to_string(ticket.id) + " from " + exporter + ": " + why;
      return Status::Unknown;
    }
    received.push_back({message.offset, message.bytes, std::move(got.descriptors.front())});
  }
  *pieces = std::move(received);
  return Status::Success;
}

} // namespace mqx::ipc
