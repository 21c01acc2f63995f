// The node's side of host block lending (host_block_lending.hpp): the pool
// and the threads that lend it.
#include "ipc/host_block_lending.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <optional>
#include <span>
#include <thread>

#include "common/log.hpp"
#include "ipc/host_block_protocol.hpp"
#include "ipc/unix_socket.hpp"

namespace mqx::ipc {
using namespace detail;
namespace {

using Clock = std::chrono::steady_clock;

// Blocks per createLendableHostBlocks call: a failure part way (the host
// out of pinnable memory) keeps the chunks made before it.
constexpr std::size_t kBlocksPerChunk = 16;
// A borrower that stops reading holds up its own connection's thread for at
// most this, and nobody else.
constexpr std::chrono::seconds kLenderSendTimeout{5};

bool sendAnswer(int socket, const Answer& answer, std::span<const int> descriptors) {
  return sendWithDescriptors(socket, std::as_bytes(std::span(&answer, 1)), descriptors);
}

} // namespace

// Each slot is Absent (its block not made yet), or its block is Dirty
// (given back, or new: nothing says the driver hands out zeroed memory),
// Cleaning (being zeroed), Free (zeroed) or Lent to one connection. The server thread accepts connections and zeroes
// Dirty blocks between polls, off the borrowers' path; a borrow short of Free blocks zeroes Dirty ones itself. One
// thread per connection serves its requests. The grower thread makes the blocks not made at start (zeroed there), a
// chunk at a time while no borrower is connected.
class HostBlockLender::Pool {
public:
  Pool(device::HostBlockMaker& maker, HostBlockLenderOptions options) : maker_(maker), options_(std::move(options)) {}
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  Status start(std::string* error);
  std::size_t blocks() const {
    std::lock_guard lock(mutex_);
    return made_;
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
    if (id >= slots_.size() || slots_[id].state == State::Absent) return {};
    return {slots_[id].block.host, slots_[id].block.bytes};
  }

private:
  enum class State { Absent, Dirty, Cleaning, Free, Lent };
  struct Slot {
    device::HostBlock block;
    FileDescriptor descriptor; // exported once; the kernel passes a reference to each borrower
    std::size_t lentOffset = 0;
    State state = State::Absent;
    std::uint64_t connection = 0; // while Lent
  };
  struct Connection {
    std::uint64_t id = 0;
    pid_t peer = 0;
    FileDescriptor socket;
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  // Makes up to `count` blocks into Absent slots: Dirty, or Free when
  // `zero` (zeroed here). The first failure ends it (what was made stays).
  Status makeBlocks(std::size_t count, bool zero);
  void grow();
  // A connection counted in borrowersConnected_ ended: the grower looks again.
  void borrowerLeft();
  void acceptAndClean();
  void accept();
  void serve(Connection& connection);
  bool lend(const Connection& connection, const Request& request);
  std::vector<std::uint64_t> claim(std::size_t count, std::uint64_t connection);
  void takeBack(std::uint64_t connection, std::span<const std::uint64_t> ids, bool all);
  bool cleanOne();

  device::HostBlockMaker& maker_;
  const HostBlockLenderOptions options_;
  mutable std::mutex mutex_;
  // slots_ is sized once, in start(), before any thread serves; after that
  // a slot's block and descriptor change only while it is Absent (under
  // mutex_), so the serving threads read those of the blocks they lend
  // without the lock.
  std::vector<Slot> slots_;
  std::vector<std::uint64_t> free_, dirty_, absent_; // ids
  std::size_t made_ = 0, cleaning_ = 0, lent_ = 0;
  std::condition_variable cleaned_;
  std::condition_variable grow_;       // a borrower left, or the end: the grower looks again
  std::size_t borrowersConnected_ = 0; // under mutex_
  std::thread grower_;
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
  const std::optional<AbstractAddress> address = abstractAddress(options_.socketName);
  if (!address) {
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
  if (::bind(listening.get(), address->get(), address->length) != 0 || ::listen(listening.get(), 64) != 0) {
    const bool taken = errno == EADDRINUSE;
    *error = "cannot listen on " + where + ": " + errnoText() + (taken ? " (another lender serves it)" : "");
    return Status::NotPermitted;
  }
  slots_.resize(options_.blocks);
  for (std::size_t id = options_.blocks; id-- > 0;)
    absent_.push_back(id);
  const auto began = Clock::now();
  const std::size_t first =
      options_.blocksAtStart == 0 ? options_.blocks : std::min(options_.blocksAtStart, options_.blocks);
  const Status failure = makeBlocks(first, false);
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  log(ok(failure) ? LogLevel::Info : LogLevel::Warn,
      "host block lender: {} of {} blocks of {:.1f} MiB made in {:.1f} ms ({:.2f} GB/s), of {}{}{}", made_, first,
      static_cast<double>(options_.blockBytes) / (1 << 20), seconds * 1e3,
      seconds > 0 ? static_cast<double>(made_ * options_.blockBytes) / seconds / 1e9 : 0.0, options_.blocks,
      ok(failure) ? "" : "; stopped by: ", ok(failure) ? "" : toString(failure));
  if (made_ == 0 && options_.blocks > 0) {
    *error = "no lendable host block of " + std::to_string(options_.blockBytes) +
             " bytes could be made: " + std::string(toString(failure));
    return ok(failure) ? Status::Unknown : failure;
  }
  listening_ = std::move(listening);
  stop_ = std::move(stop);
  dirtied_ = std::move(dirtied);
  startedBy_ = ::getpid();
  server_ = std::thread([this] { acceptAndClean(); });
  if (made_ < options_.blocks) grower_ = std::thread([this] { grow(); });
  return Status::Success;
}

Status HostBlockLender::Pool::makeBlocks(std::size_t count, bool zero) {
  Status failure = Status::Success;
  for (std::size_t made = 0; made < count && ok(failure);) {
    std::vector<device::HostBlock> chunk;
    failure = maker_.createLendableHostBlocks(options_.blockBytes, std::min(kBlocksPerChunk, count - made), &chunk);
    if (!ok(failure)) break;
    made += chunk.size();
    for (const device::HostBlock& block : chunk) {
      device::LentHostBlock lent;
      if (ok(failure)) failure = maker_.exportHostBlock(block, &lent);
      if (!ok(failure)) { // this block and the rest of its chunk go
        maker_.destroyHostBlocks({block});
        continue;
      }
      if (zero) std::memset(block.host, 0, block.bytes);
      std::lock_guard lock(mutex_);
      const std::uint64_t id = absent_.back(); // count never exceeds the Absent slots: one grower
      absent_.pop_back();
      slots_[id].block = block;
      slots_[id].descriptor = FileDescriptor(lent.descriptor);
      slots_[id].lentOffset = lent.offset;
      slots_[id].state = zero ? State::Free : State::Dirty;
      (zero ? free_ : dirty_).push_back(id);
      ++made_;
    }
    if (zero) cleaned_.notify_all(); // a borrow waiting for a block being zeroed takes these
  }
  return failure;
}

void HostBlockLender::Pool::grow() {
  const auto began = Clock::now();
  std::unique_lock lock(mutex_);
  while (!stopping_ && made_ < options_.blocks) {
    if (borrowersConnected_ != 0) {
      grow_.wait(lock); // a borrower's end, or the lender's, wakes it
      continue;
    }
    const std::size_t count = std::min(kBlocksPerChunk, options_.blocks - made_);
    lock.unlock();
    const Status failure = makeBlocks(count, true);
    lock.lock();
    if (!ok(failure)) {
      log(LogLevel::Warn, "host block lender: stopped making blocks at {} of {} ({})", made_, options_.blocks,
          toString(failure));
      return;
    }
  }
  if (made_ == options_.blocks)
    log(LogLevel::Info, "host block lender: all {} blocks made, {:.1f} s after start", made_,
        std::chrono::duration<double>(Clock::now() - began).count());
}

void HostBlockLender::Pool::borrowerLeft() {
  {
    std::lock_guard lock(mutex_);
    --borrowersConnected_;
  }
  grow_.notify_all();
}

HostBlockLender::Pool::~Pool() {
  if (server_.joinable() && startedBy_ != ::getpid()) {
    // A forked child's copy: the threads run in the parent only, and the
    // memory is the parent's to destroy.
    server_.detach();
    if (grower_.joinable()) grower_.detach();
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
    grow_.notify_all();
    const std::uint64_t one = 1;
    if (::write(stop_.get(), &one, sizeof one) != sizeof one)
      log(LogLevel::Error, "host block lender: cannot wake its threads ({})", errnoText());
    server_.join();
    if (grower_.joinable()) grower_.join(); // within one chunk's making
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
    if (slot.state != State::Absent) blocks.push_back(slot.block);
  if (!blocks.empty()) maker_.destroyHostBlocks(blocks);
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
  const PeerCredentials peer = peerCredentials(socket.get());
  if (!peer.sameUser) {
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
  {
    // Counted before its thread runs, which uncounts it at its end.
    std::lock_guard lock(mutex_);
    ++borrowersConnected_;
  }
  try {
    connection->thread = std::thread([this, &serving] { serve(serving); });
  } catch (const std::system_error& failure) {
    log(LogLevel::Warn, "host block lender: no thread to serve process {} ({})", peer.pid, failure.what());
    borrowerLeft();
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
  borrowerLeft();
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

HostBlockLender::HostBlockLender(device::HostBlockMaker& maker, HostBlockLenderOptions options)
    : pool_(std::make_unique<Pool>(maker, std::move(options))) {}
HostBlockLender::~HostBlockLender() = default;
Status HostBlockLender::start(std::string* error) { return pool_->start(error); }
std::size_t HostBlockLender::blocks() const { return pool_->blocks(); }
std::size_t HostBlockLender::freeBlocks() const { return pool_->freeBlocks(); }
std::size_t HostBlockLender::lentBlocks() const { return pool_->lentBlocks(); }
std::span<const std::byte> HostBlockLender::view(std::uint64_t id) const { return pool_->view(id); }

} // namespace mqx::ipc
