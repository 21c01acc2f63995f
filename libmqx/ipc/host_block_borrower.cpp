// A client's side of host block lending (host_block_lending.hpp).
#include "ipc/host_block_lending.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <optional>
#include <span>

#include "common/log.hpp"
#include "ipc/host_block_protocol.hpp"
#include "ipc/unix_socket.hpp"

namespace mqx::ipc {
using namespace detail;
namespace {

using Clock = std::chrono::steady_clock;

} // namespace

void closeDescriptors(std::span<BorrowedHostBlock> blocks) {
  for (BorrowedHostBlock& block : blocks) {
    if (block.lent.descriptor >= 0) ::close(block.lent.descriptor);
    block.lent.descriptor = -1;
  }
}

HostBlockBorrower::HostBlockBorrower(std::string socketName, std::chrono::milliseconds timeout)
    : socketName_(std::move(socketName)), timeout_(timeout) {}

HostBlockBorrower::~HostBlockBorrower() = default;

std::string HostBlockBorrower::lastError() const {
  std::lock_guard lock(mutex_);
  return lastError_;
}

std::size_t HostBlockBorrower::borrowedBlocks() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

Status HostBlockBorrower::fail(Status status, std::string message) {
  lastError_ = std::move(message);
  return status;
}

void HostBlockBorrower::disconnectLocked() {
  connection_ = FileDescriptor();
  held_.clear(); // the lender took them back (or is gone)
}

Status HostBlockBorrower::connectLocked(Deadline deadline) {
  const std::string where = "@" + socketName_;
  const std::optional<AbstractAddress> address = abstractAddress(socketName_);
  if (!address)
    return fail(Status::InvalidValue, "the lender's socket name '" + socketName_ + "' is empty or too long");
  FileDescriptor socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return fail(Status::OutOfMemory, "cannot create a socket: " + errnoText());
  // connect() waits while the lender's backlog is full, for at most the
  // send timeout; a name nobody listens on is refused at once.
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  setSendTimeout(socket.get(), std::max(left, std::chrono::milliseconds(1)));
  if (::connect(socket.get(), address->get(), address->length) != 0) {
    if (errno == EAGAIN || errno == EINPROGRESS)
      return fail(Status::Timeout, "waiting for the lender " + where + " to accept a connection: its backlog " +
                                       "stayed full for " + std::to_string(timeout_.count()) + " ms");
    return fail(Status::NotSupported, "no lender listens on " + where + " (" + errnoText() + ")");
  }
  // Abstract names have no permissions: anybody could bind ours first, and
  // a page's bytes must not go into another user's memory.
  const PeerCredentials peer = peerCredentials(socket.get());
  if (!peer.sameUser)
    return fail(Status::NotPermitted, where + " is served by uid " + std::to_string(peer.uid) + ", not by uid " +
                                          std::to_string(::geteuid()) + ": nothing is borrowed from it");
  setSendTimeout(socket.get(), std::chrono::milliseconds(0)); // sends poll (sendLocked)
  connection_ = std::move(socket);
  connectedFor_ = ::getpid();
  held_.clear();
  return Status::Success;
}

Status HostBlockBorrower::waitLocked(short events, Deadline deadline, const std::string& what) {
  const std::string where = "@" + socketName_;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return fail(Status::Timeout, "waiting for the lender " + where + " to " + what + ": nothing within " +
                                       std::to_string(timeout_.count()) + " ms");
    pollfd waiting{connection_.get(), events, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return fail(Status::Unknown, "poll on " + where + " failed: " + errnoText());
    if (ready <= 0) continue;
    if ((waiting.revents & events) != 0) return Status::Success;
    disconnectLocked();
    return fail(Status::Unknown, "the lender " + where + " closed the connection while we waited for it to " + what);
  }
}

Status HostBlockBorrower::sendLocked(const void* message, std::size_t bytes, Deadline deadline,
                                     const std::string& what) {
  for (;;) {
    const ssize_t sent = ::send(connection_.get(), message, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent == static_cast<ssize_t>(bytes)) return Status::Success;
    if (sent < 0 && (errno == EAGAIN || errno == EINTR)) {
      MQX_TRY(waitLocked(POLLOUT, deadline, what));
      continue;
    }
    const std::string why = sent < 0 ? errnoText() : "sent in part";
    // Only a lender that is gone ends the connection here: closing it while
    // the lender lives would have it lend blocks this process still uses.
    if (sent < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) disconnectLocked();
    return fail(Status::Unknown, "asking the lender @" + socketName_ + " to " + what + ": " + why);
  }
}

void HostBlockBorrower::sendReturnsLocked(std::span<const std::uint64_t> ids, Deadline deadline) {
  for (std::size_t first = 0; first < ids.size() && connection_.valid(); first += kBlocksPerMessage) {
    Request request;
    request.kind = RequestKind::Return;
    request.count = static_cast<std::uint32_t>(std::min(kBlocksPerMessage, ids.size() - first));
    std::copy_n(ids.begin() + static_cast<std::ptrdiff_t>(first), request.count, request.ids.begin());
    const std::string kept = lastError_; // a failed borrow's reason is the one to report
    if (!ok(sendLocked(&request, sizeof request, deadline, "take back " + std::to_string(request.count) + " blocks"))) {
      // They come back when this connection closes.
      log(LogLevel::Warn, "host block borrower: {}", lastError_);
      lastError_ = kept;
      return;
    }
  }
}

Status HostBlockBorrower::borrow(std::size_t blockBytes, std::size_t count, std::vector<BorrowedHostBlock>* out) {
  std::lock_guard lock(mutex_);
  if (out == nullptr || blockBytes == 0 || count == 0)
    return fail(Status::InvalidValue, "a borrow needs a block size, a count and a place for the blocks");
  out->clear();
  const Deadline deadline = Clock::now() + timeout_;
  if (connection_.valid()) {
    // A connection inherited across fork is the parent's (closing our copy
    // leaves it open there), and one the lender closed (mqxd restarted) is
    // of no use: both are replaced.
    pollfd state{connection_.get(), 0, 0};
    if (connectedFor_ != ::getpid() || (::poll(&state, 1, 0) > 0 && (state.revents & (POLLHUP | POLLERR)) != 0))
      disconnectLocked();
  }
  if (!connection_.valid()) MQX_TRY(connectLocked(deadline));
  const auto wanted =
      static_cast<std::uint32_t>(std::min<std::size_t>(count, std::numeric_limits<std::uint32_t>::max()));
  return exchangeLocked(blockBytes, wanted, deadline, out);
}

Status HostBlockBorrower::exchangeLocked(std::uint64_t blockBytes, std::uint32_t count, Deadline deadline,
                                         std::vector<BorrowedHostBlock>* out) {
  const std::string where = "@" + socketName_;
  const std::string asked =
      "a borrow of " + std::to_string(count) + " blocks of " + std::to_string(blockBytes) + " bytes";
  Request request;
  request.kind = RequestKind::Borrow;
  request.count = count;
  request.sequence = ++sequence_;
  request.blockBytes = blockBytes;
  MQX_TRY(sendLocked(&request, sizeof request, deadline, "take " + asked));

  std::vector<BorrowedHostBlock> received;
  std::vector<FileDescriptor> descriptors; // received's, owned until all came
  std::vector<std::uint64_t> unwanted;     // lent by answers to earlier borrows, or by a failed one
  std::optional<std::uint32_t> total;
  std::uint32_t arrived = 0; // blocks of this borrow's answer, taken or not
  Status result = Status::Success;
  while (!total || arrived < *total) {
    const std::string what = !total ? "answer " + asked
                                    : "send the rest of " + asked + " (" + std::to_string(received.size()) + " of " +
                                          std::to_string(*total) + " came)";
    result = waitLocked(POLLIN, deadline, what);
    if (!ok(result)) break;
    Answer answer;
    ReceivedMessage message = receiveWithDescriptors(connection_.get(), std::as_writable_bytes(std::span(&answer, 1)),
                                                     kBlocksPerMessage, MSG_DONTWAIT);
    const ssize_t got = message.bytes;
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    std::vector<FileDescriptor>& came = message.descriptors;
    if (got <= 0) {
      const std::string why = got == 0 ? "it closed the connection" : errnoText();
      if (got == 0) disconnectLocked();
      result = fail(Status::Unknown, "receiving " + asked + " from the lender " + where + ": " + why);
      break;
    }
    const bool whole = got == static_cast<ssize_t>(sizeof answer) && !message.payloadCutOff &&
                       !message.descriptorsCutOff && answer.count <= kBlocksPerMessage && came.size() == answer.count;
    if (whole && answer.sequence != request.sequence) { // a late answer to a borrow that gave up
      for (std::uint32_t i = 0; i < answer.count; ++i)
        unwanted.push_back(answer.blocks[i].id);
      continue;
    }
    if (!whole) {
      // Descriptors cut off (this process at its limit of open files) or a
      // lender of another version: what came goes back.
      for (std::uint32_t i = 0; i < std::min<std::size_t>(answer.count, kBlocksPerMessage); ++i)
        unwanted.push_back(answer.blocks[i].id);
      result = fail(Status::Unknown, "receiving " + asked + " from the lender " + where + ": a message of " +
                                         std::to_string(got) + " bytes with " + std::to_string(came.size()) +
                                         " descriptors, not an answer (" +
                                         (message.descriptorsCutOff ? "descriptors cut off" : "malformed") + ")");
      break;
    }
    if (!total) {
      total = answer.total;
      if (answer.status == AnswerStatus::WrongSize) {
        result =
            fail(Status::InvalidValue, "the lender " + where + " lends blocks of " + std::to_string(answer.blockBytes) +
                                           " bytes, not of " + std::to_string(blockBytes));
        break;
      }
      if (answer.status != AnswerStatus::Ok || answer.total == 0) {
        result = fail(Status::OutOfMemory, "the lender " + where + " has no free block");
        break;
      }
    }
    arrived += answer.count;
    for (std::uint32_t i = 0; i < answer.count; ++i) {
      const BlockEntry& entry = answer.blocks[i];
      if (entry.bytes != blockBytes || received.size() >= count || held_.contains(entry.id)) {
        unwanted.push_back(entry.id);
        continue;
      }
      received.push_back({entry.id, {came[i].get(), static_cast<std::size_t>(entry.offset), entry.bytes}});
      descriptors.push_back(std::move(came[i]));
    }
  }
  if (!ok(result)) {
    for (const BorrowedHostBlock& block : received)
      unwanted.push_back(block.id);
  } else {
    for (std::size_t i = 0; i < received.size(); ++i) {
      (void)descriptors[i].release(); // the caller's now
      held_.insert(received[i].id);
    }
    *out = std::move(received);
  }
  // Given back at once where the socket takes them; else with the
  // connection. Never one held here: a confused answer must not return a
  // block in use.
  std::erase_if(unwanted, [&](std::uint64_t id) { return held_.contains(id); });
  sendReturnsLocked(unwanted, std::max(deadline, Clock::now() + std::chrono::milliseconds(10)));
  return result;
}

void HostBlockBorrower::giveBack(std::span<const std::uint64_t> ids) {
  std::lock_guard lock(mutex_);
  if (!connection_.valid() || connectedFor_ != ::getpid()) return; // the lender took them back already
  std::vector<std::uint64_t> returning;
  for (const std::uint64_t id : ids)
    if (held_.erase(id) > 0) returning.push_back(id);
  sendReturnsLocked(returning, Clock::now() + timeout_);
}

} // namespace mqx::ipc
