#include "ipc/host_block_lending.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <list>
#include <optional>
#include <thread>

#include "common/log.hpp"

namespace mqx::ipc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<char, 8> kMagic{'m', 'q', 'x', 'l', 'e', 'n', 'd', '1'};
// Blocks, and so descriptors, per message: far under SCM_RIGHTS's limit
// (253), and a usual borrow still fits in one or two messages.
constexpr std::size_t kBlocksPerMessage = 16;
// Blocks per createLendableHostBlocks call: a failure part way (the host
// out of pinnable memory) keeps the chunks made before it.
constexpr std::size_t kBlocksPerChunk = 16;
// A borrower that stops reading holds up its own connection's thread for at
// most this, and nobody else.
constexpr std::chrono::seconds kLenderSendTimeout{5};

// The wire, over SOCK_SEQPACKET (each message arrives whole). A borrower
// sends Requests. A Borrow is answered by one or more Answers, the blocks
// kBlocksPerMessage at a time with their descriptors attached; a Return by
// nothing. Answers carry their borrow's sequence number, so that a borrower
// that stopped waiting recognises a late answer and gives its blocks back
// instead of taking them for the answer to a later borrow.
enum class RequestKind : std::uint32_t { Borrow = 1, Return = 2 };
struct Request {
  std::array<char, 8> magic = kMagic;
  RequestKind kind = RequestKind::Borrow;
  std::uint32_t count = 0;                            // Borrow: blocks wanted; Return: ids below
  std::uint64_t sequence = 0;                         // Borrow
  std::uint64_t blockBytes = 0;                       // Borrow
  std::array<std::uint64_t, kBlocksPerMessage> ids{}; // Return
};
enum class AnswerStatus : std::uint32_t { Ok = 0, Empty = 1, WrongSize = 2 };
struct BlockEntry {
  std::uint64_t id = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};
struct Answer {
  std::uint64_t sequence = 0;
  AnswerStatus status = AnswerStatus::Empty;
  std::uint32_t total = 0; // blocks in the whole answer
  std::uint32_t count = 0; // in this message, one descriptor each
  std::uint32_t reserved = 0;
  std::uint64_t blockBytes = 0; // the pool's
  std::array<BlockEntry, kBlocksPerMessage> blocks{};
};

// One Answer with room for its descriptors. (memory_export.cpp's
// PieceEnvelope carries one descriptor; this one carries up to 16.)
struct AnswerEnvelope {
  Answer answer;
  iovec data{&answer, sizeof answer};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kBlocksPerMessage)] = {};
  msghdr header{};
  AnswerEnvelope() {
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
  }
  AnswerEnvelope(const AnswerEnvelope&) = delete;
  AnswerEnvelope& operator=(const AnswerEnvelope&) = delete;
};

std::string errnoText() { return std::strerror(errno); }

// The abstract socket `name`: no file, gone with its last descriptor. False
// when the name does not fit.
bool abstractAddress(const std::string& name, sockaddr_un* address, socklen_t* length) {
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  if (name.empty() || name.size() > sizeof address->sun_path - 1) return false;
  std::memcpy(address->sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

void setSendTimeout(int socket, std::chrono::milliseconds timeout) {
  timeval value{};
  value.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  value.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &value, sizeof value);
}

bool sendAnswer(int socket, const Answer& answer, std::span<const int> descriptors) {
  AnswerEnvelope envelope;
  envelope.answer = answer;
  if (descriptors.empty()) {
    envelope.header.msg_control = nullptr;
    envelope.header.msg_controllen = 0;
  } else {
    envelope.header.msg_controllen = CMSG_SPACE(sizeof(int) * descriptors.size());
    cmsghdr* rights = CMSG_FIRSTHDR(&envelope.header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * descriptors.size());
    std::memcpy(CMSG_DATA(rights), descriptors.data(), sizeof(int) * descriptors.size());
  }
  return ::sendmsg(socket, &envelope.header, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof answer);
}

// The descriptors a received message carried, owned.
std::vector<FileDescriptor> receivedDescriptors(msghdr* header) {
  std::vector<FileDescriptor> descriptors;
  for (cmsghdr* part = CMSG_FIRSTHDR(header); part != nullptr; part = CMSG_NXTHDR(header, part)) {
    if (part->cmsg_level != SOL_SOCKET || part->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (part->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int descriptor = -1;
      std::memcpy(&descriptor, CMSG_DATA(part) + i * sizeof(int), sizeof descriptor);
      descriptors.emplace_back(descriptor);
    }
  }
  return descriptors;
}

} // namespace

// ---------------------------------------------------------------------------
// The lender
// ---------------------------------------------------------------------------

// Each block is Dirty (given back, or new: nothing says the driver hands
// out zeroed memory), Cleaning (being zeroed), Free (zeroed) or Lent to one
// connection. The server thread accepts connections and zeroes Dirty blocks
// between polls, off the borrowers' path; a borrow short of Free blocks
// zeroes Dirty ones itself. One thread per connection serves its requests.
class HostBlockLender::Pool {
public:
  Pool(device::DeviceBackend& backend, HostBlockLenderOptions options)
      : backend_(backend), options_(std::move(options)) {}
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  Status start(std::string* error);
  std::size_t blocks() const {
    std::lock_guard lock(mutex_);
    return slots_.size();
  }
  std::size_t freeBlocks() const {
    std::lock_guard lock(mutex_);
    return free_.size() + dirty_.size() + cleaning_;
  }
  std::size_t lentBlocks() const {
    std::lock_guard lock(mutex_);
    return lent_;
  }
  std::span<const std::byte> view(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    if (id >= slots_.size()) return {};
    return {slots_[id].block.host, slots_[id].block.bytes};
  }

private:
  enum class State { Dirty, Cleaning, Free, Lent };
  struct Slot {
    device::HostBlock block;
    FileDescriptor descriptor; // exported once; the kernel passes a reference to each borrower
    std::size_t lentOffset = 0;
    State state = State::Dirty;
    std::uint64_t connection = 0; // while Lent
  };
  struct Connection {
    std::uint64_t id = 0;
    pid_t peer = 0;
    FileDescriptor socket;
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  Status createBlocks(std::string* error);
  void acceptAndClean();
  void accept();
  void serve(Connection& connection);
  bool lend(const Connection& connection, const Request& request);
  std::vector<std::uint64_t> claim(std::size_t count, std::uint64_t connection);
  void takeBack(std::uint64_t connection, std::span<const std::uint64_t> ids, bool all);
  bool cleanOne();

  device::DeviceBackend& backend_;
  const HostBlockLenderOptions options_;
  mutable std::mutex mutex_;
  // slots_ only grows, in start(), before any thread serves; after that only
  // the slots' state and connection change (under mutex_), so the serving
  // threads read a slot's block and descriptor without the lock.
  std::vector<Slot> slots_;
  std::vector<std::uint64_t> free_, dirty_; // ids
  std::size_t cleaning_ = 0, lent_ = 0;
  std::condition_variable cleaned_;
  bool stopping_ = false; // under mutex_
  FileDescriptor listening_;
  FileDescriptor stop_;    // an eventfd, written once: ends every thread's poll
  FileDescriptor dirtied_; // an eventfd: blocks to zero
  std::thread server_;
  pid_t startedBy_ = 0; // a forked child has none of the threads
  // Only the server thread adds and reaps connections; the destructor
  // touches the list once that thread has ended.
  std::list<std::unique_ptr<Connection>> connections_;
  std::uint64_t nextConnection_ = 1;
};

Status HostBlockLender::Pool::start(std::string* error) {
  if (error == nullptr) return Status::InvalidValue;
  if (server_.joinable() || listening_.valid()) {
    *error = "the host block lender is started already";
    return Status::InvalidValue;
  }
  if (options_.blockBytes == 0) {
    *error = "host blocks of 0 bytes cannot be lent";
    return Status::InvalidValue;
  }
  // The socket first: a name another lender holds fails before the slow part.
  const std::string where = "@" + options_.socketName;
  sockaddr_un address{};
  socklen_t length = 0;
  if (!abstractAddress(options_.socketName, &address, &length)) {
    *error = "the lender's socket name '" + options_.socketName + "' is empty or longer than 107 bytes";
    return Status::InvalidValue;
  }
  FileDescriptor listening(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  FileDescriptor stop(::eventfd(0, EFD_CLOEXEC));
  FileDescriptor dirtied(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!listening.valid() || !stop.valid() || !dirtied.valid()) {
    *error = "cannot create the lender's socket: " + errnoText();
    return Status::OutOfMemory;
  }
  if (::bind(listening.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(listening.get(), 64) != 0) {
    const bool taken = errno == EADDRINUSE;
    *error = "cannot listen on " + where + ": " + errnoText() + (taken ? " (another lender serves it)" : "");
    return Status::NotPermitted;
  }
  MQX_TRY(createBlocks(error));
  listening_ = std::move(listening);
  stop_ = std::move(stop);
  dirtied_ = std::move(dirtied);
  startedBy_ = ::getpid();
  server_ = std::thread([this] { acceptAndClean(); });
  return Status::Success;
}

Status HostBlockLender::Pool::createBlocks(std::string* error) {
  const auto began = Clock::now();
  Status failure = Status::Success;
  for (std::size_t made = 0; made < options_.blocks && ok(failure);) {
    const std::size_t count = std::min(kBlocksPerChunk, options_.blocks - made);
    std::vector<device::HostBlock> chunk;
    failure = backend_.createLendableHostBlocks(options_.blockBytes, count, &chunk);
    if (!ok(failure)) break;
    made += chunk.size();
    for (const device::HostBlock& block : chunk) {
      device::LentHostBlock lent;
      if (ok(failure)) failure = backend_.exportHostBlock(block, &lent);
      if (!ok(failure)) { // this block and the rest of its chunk go
        backend_.destroyHostBlocks({block});
        continue;
      }
      std::lock_guard lock(mutex_);
      slots_.push_back(Slot{block, FileDescriptor(lent.descriptor), lent.offset});
      dirty_.push_back(slots_.size() - 1);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  const double bytes = static_cast<double>(slots_.size() * options_.blockBytes);
  log(ok(failure) ? LogLevel::Info : LogLevel::Warn,
      "host block lender: {} of {} blocks of {:.1f} MiB made in {:.1f} ms ({:.2f} GB/s){}{}", slots_.size(),
      options_.blocks, static_cast<double>(options_.blockBytes) / (1 << 20), seconds * 1e3,
      seconds > 0 ? bytes / seconds / 1e9 : 0.0,
      ok(failure) ? "" : "; stopped by: ", ok(failure) ? "" : toString(failure));
  if (slots_.empty() && options_.blocks > 0) {
    *error = "no lendable host block of " + std::to_string(options_.blockBytes) +
             " bytes could be made: " + std::string(toString(failure));
    return ok(failure) ? Status::Unknown : failure;
  }
  return Status::Success;
}

HostBlockLender::Pool::~Pool() {
  if (server_.joinable() && startedBy_ != ::getpid()) {
    // A forked child's copy: the threads run in the parent only, and the
    // memory is the parent's to destroy.
    server_.detach();
    for (auto& connection : connections_)
      if (connection->thread.joinable()) connection->thread.detach();
    return;
  }
  if (server_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cleaned_.notify_all();
    const std::uint64_t one = 1;
    if (::write(stop_.get(), &one, sizeof one) != sizeof one)
      log(LogLevel::Error, "host block lender: cannot wake its threads ({})", errnoText());
    server_.join();
    // A connection's thread may be inside a send to a borrower that does not
    // read: shutting the socket down ends that at once.
    for (auto& connection : connections_)
      ::shutdown(connection->socket.get(), SHUT_RDWR);
    for (auto& connection : connections_)
      if (connection->thread.joinable()) connection->thread.join();
    connections_.clear();
  }
  std::vector<device::HostBlock> blocks;
  for (const Slot& slot : slots_)
    blocks.push_back(slot.block);
  if (!blocks.empty()) backend_.destroyHostBlocks(blocks);
}

void HostBlockLender::Pool::acceptAndClean() {
  bool dirty = true; // new blocks are
  for (;;) {
    pollfd waiting[3] = {{listening_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}, {dirtied_.get(), POLLIN, 0}};
    // Without blocks to zero, wake now and then to reap ended connections.
    if (::poll(waiting, 3, dirty ? 0 : 100) < 0 && errno != EINTR) {
      log(LogLevel::Error, "host block lender: poll failed ({}); no more borrowers are served", errnoText());
      return;
    }
    if (waiting[1].revents != 0) return;
    if (waiting[2].revents != 0) {
      std::uint64_t count = 0;
      if (::read(dirtied_.get(), &count, sizeof count) < 0 && errno != EAGAIN)
        log(LogLevel::Warn, "host block lender: reading its eventfd failed ({})", errnoText());
    }
    if ((waiting[0].revents & POLLIN) != 0) accept();
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!(*it)->finished.load()) {
        ++it;
        continue;
      }
      (*it)->thread.join();
      it = connections_.erase(it);
    }
    // One block per turn, so that a connection waits at most one memset.
    dirty = cleanOne();
  }
}

void HostBlockLender::Pool::accept() {
  FileDescriptor socket(::accept4(listening_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!socket.valid()) {
    // Out of descriptors or memory: the connection stays queued and the
    // socket readable, so pause rather than spin.
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      log(LogLevel::Warn, "host block lender: cannot accept a borrower ({}); retrying", errnoText());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return;
  }
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 || peer.uid != ::geteuid()) {
    log(LogLevel::Warn, "host block lender: refused a connection from uid {} (only uid {} is served)", peer.uid,
        ::geteuid());
    return;
  }
  setSendTimeout(socket.get(), kLenderSendTimeout);
  auto connection = std::make_unique<Connection>();
  connection->id = nextConnection_++;
  connection->peer = peer.pid;
  connection->socket = std::move(socket);
  Connection& serving = *connection;
  try {
    connection->thread = std::thread([this, &serving] { serve(serving); });
  } catch (const std::system_error& failure) {
    log(LogLevel::Warn, "host block lender: no thread to serve process {} ({})", peer.pid, failure.what());
    return;
  }
  connections_.push_back(std::move(connection));
}

void HostBlockLender::Pool::serve(Connection& connection) {
  const int socket = connection.socket.get();
  for (;;) {
    pollfd waiting[2] = {{socket, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(waiting, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (waiting[1].revents != 0) break;
    Request request;
    const ssize_t got = ::recv(socket, &request, sizeof request, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got == 0) break; // the borrower closed, or exited
    if (got != static_cast<ssize_t>(sizeof request) || request.magic != kMagic) {
      log(LogLevel::Warn, "host block lender: process {} sent a malformed request; closing", connection.peer);
      break;
    }
    if (request.kind == RequestKind::Borrow) {
      if (!lend(connection, request)) break;
    } else if (request.kind == RequestKind::Return) {
      const std::size_t count = std::min<std::size_t>(request.count, kBlocksPerMessage);
      takeBack(connection.id, {request.ids.data(), count}, false);
    } else {
      log(LogLevel::Warn, "host block lender: process {} sent request kind {}; closing", connection.peer,
          static_cast<std::uint32_t>(request.kind));
      break;
    }
  }
  takeBack(connection.id, {}, true);
  connection.finished.store(true);
}

bool HostBlockLender::Pool::lend(const Connection& connection, const Request& request) {
  Answer answer;
  answer.sequence = request.sequence;
  answer.blockBytes = options_.blockBytes;
  std::vector<std::uint64_t> ids;
  if (request.blockBytes != options_.blockBytes) {
    answer.status = AnswerStatus::WrongSize;
  } else {
    ids = claim(request.count, connection.id);
    answer.status = ids.empty() ? AnswerStatus::Empty : AnswerStatus::Ok;
  }
  answer.total = static_cast<std::uint32_t>(ids.size());
  if (ids.empty()) return sendAnswer(connection.socket.get(), answer, {});
  // The blocks are this connection's from here: a send that fails closes
  // the connection, which takes them back.
  for (std::size_t first = 0; first < ids.size(); first += kBlocksPerMessage) {
    answer.count = static_cast<std::uint32_t>(std::min(kBlocksPerMessage, ids.size() - first));
    std::array<int, kBlocksPerMessage> descriptors{};
    for (std::uint32_t i = 0; i < answer.count; ++i) {
      const Slot& slot = slots_[ids[first + i]];
      answer.blocks[i] = {ids[first + i], slot.lentOffset, slot.block.bytes};
      descriptors[i] = slot.descriptor.get();
    }
    if (!sendAnswer(connection.socket.get(), answer, {descriptors.data(), answer.count})) {
      log(LogLevel::Warn, "host block lender: sending {} blocks to process {} failed ({}); taking them back",
          ids.size(), connection.peer, errnoText());
      return false;
    }
  }
  log(LogLevel::Debug, "host block lender: lent {} of {} blocks to process {}", ids.size(), request.count,
      connection.peer);
  return true;
}

std::vector<std::uint64_t> HostBlockLender::Pool::claim(std::size_t count, std::uint64_t connection) {
  std::vector<std::uint64_t> taken, toZero;
  std::unique_lock lock(mutex_);
  auto take = [&](std::vector<std::uint64_t>& from) {
    const std::uint64_t id = from.back();
    from.pop_back();
    slots_[id].state = State::Lent;
    slots_[id].connection = connection;
    ++lent_;
    taken.push_back(id);
    return id;
  };
  for (;;) {
    while (taken.size() < count && !free_.empty())
      take(free_);
    while (taken.size() < count && !dirty_.empty())
      toZero.push_back(take(dirty_));
    // A block the server thread is zeroing is one memset from free.
    if (taken.size() == count || cleaning_ == 0 || stopping_) break;
    cleaned_.wait(lock);
  }
  lock.unlock();
  for (const std::uint64_t id : toZero)
    std::memset(slots_[id].block.host, 0, slots_[id].block.bytes);
  return taken;
}

// Blocks `ids` (or, with `all`, every block) lent on `connection` become
// Dirty; ids lent elsewhere or not at all are ignored (a confused borrower
// must not return another's blocks).
void HostBlockLender::Pool::takeBack(std::uint64_t connection, std::span<const std::uint64_t> ids, bool all) {
  std::size_t returned = 0;
  {
    std::lock_guard lock(mutex_);
    auto give = [&](std::uint64_t id) {
      Slot& slot = slots_[id];
      if (slot.state != State::Lent || slot.connection != connection) return;
      slot.state = State::Dirty;
      slot.connection = 0;
      --lent_;
      dirty_.push_back(id);
      ++returned;
    };
    if (all) {
      for (std::uint64_t id = 0; id < slots_.size(); ++id)
        give(id);
    } else {
      for (const std::uint64_t id : ids)
        if (id < slots_.size()) give(id);
    }
  }
  const std::uint64_t one = 1;
  // Also when nothing came back: an ended connection is reaped sooner.
  if (::write(dirtied_.get(), &one, sizeof one) < 0 && errno != EAGAIN)
    log(LogLevel::Warn, "host block lender: cannot wake its server thread ({})", errnoText());
  if (returned > 0) log(LogLevel::Debug, "host block lender: {} blocks came back", returned);
}

bool HostBlockLender::Pool::cleanOne() {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (dirty_.empty() || stopping_) return false;
    id = dirty_.back();
    dirty_.pop_back();
    slots_[id].state = State::Cleaning;
    ++cleaning_;
  }
  std::memset(slots_[id].block.host, 0, slots_[id].block.bytes);
  {
    std::lock_guard lock(mutex_);
    slots_[id].state = State::Free;
    --cleaning_;
    free_.push_back(id);
  }
  cleaned_.notify_all();
  return true;
}

HostBlockLender::HostBlockLender(device::DeviceBackend& backend, HostBlockLenderOptions options)
    : pool_(std::make_unique<Pool>(backend, std::move(options))) {}
HostBlockLender::~HostBlockLender() = default;
Status HostBlockLender::start(std::string* error) { return pool_->start(error); }
std::size_t HostBlockLender::blocks() const { return pool_->blocks(); }
std::size_t HostBlockLender::freeBlocks() const { return pool_->freeBlocks(); }
std::size_t HostBlockLender::lentBlocks() const { return pool_->lentBlocks(); }
std::span<const std::byte> HostBlockLender::view(std::uint64_t id) const { return pool_->view(id); }

// ---------------------------------------------------------------------------
// The borrower
// ---------------------------------------------------------------------------

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
  sockaddr_un address{};
  socklen_t length = 0;
  if (!abstractAddress(socketName_, &address, &length))
    return fail(Status::InvalidValue, "the lender's socket name '" + socketName_ + "' is empty or too long");
  FileDescriptor socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return fail(Status::OutOfMemory, "cannot create a socket: " + errnoText());
  // connect() waits while the lender's backlog is full, for at most the
  // send timeout; a name nobody listens on is refused at once.
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  setSendTimeout(socket.get(), std::max(left, std::chrono::milliseconds(1)));
  if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    if (errno == EAGAIN || errno == EINPROGRESS)
      return fail(Status::Timeout, "waiting for the lender " + where + " to accept a connection: its backlog " +
                                       "stayed full for " + std::to_string(timeout_.count()) + " ms");
    return fail(Status::NotSupported, "no lender listens on " + where + " (" + errnoText() + ")");
  }
  // Abstract names have no permissions: anybody could bind ours first, and
  // a page's bytes must not go into another user's memory.
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != ::geteuid())
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
    AnswerEnvelope envelope;
    const ssize_t got = ::recvmsg(connection_.get(), &envelope.header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    std::vector<FileDescriptor> came = receivedDescriptors(&envelope.header);
    if (got <= 0) {
      const std::string why = got == 0 ? "it closed the connection" : errnoText();
      if (got == 0) disconnectLocked();
      result = fail(Status::Unknown, "receiving " + asked + " from the lender " + where + ": " + why);
      break;
    }
    const Answer& answer = envelope.answer;
    const bool whole = got == static_cast<ssize_t>(sizeof answer) &&
                       (envelope.header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0 &&
                       answer.count <= kBlocksPerMessage && came.size() == answer.count;
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
      result = fail(Status::Unknown,
                    "receiving " + asked + " from the lender " + where + ": a message of " + std::to_string(got) +
                        " bytes with " + std::to_string(came.size()) + " descriptors, not an answer (" +
                        ((envelope.header.msg_flags & MSG_CTRUNC) != 0 ? "descriptors cut off" : "malformed") + ")");
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
