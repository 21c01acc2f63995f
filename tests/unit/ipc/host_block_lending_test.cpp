// Host blocks lent by the node's pool (ipc/host_block_lending.hpp) on the
// simulated device, whose host blocks are shared-memory files as the GPU's
// are exportable pinned memory: a borrower in another process sees the
// lender's memory, blocks come back when it exits, and nobody sees another's
// bytes. Real processes and sockets; every wait is bounded.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "ipc/host_block_lending.hpp"
#include "ipc/host_block_protocol.hpp"
#include "manager_fixture.hpp"

namespace mqx::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kBlockBytes = 4 * 64 * 1024; // a multiple of smallConfig's granularity

std::string socketName(const std::string& tag) { return "mqx-test-lend-" + std::to_string(::getpid()) + "-" + tag; }

std::byte patternByte(std::uint64_t id, std::size_t at) {
  return static_cast<std::byte>((id * 31 + at * 7 + 1) & 0xff);
}

bool allZero(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

bool holdsPattern(std::span<const std::byte> bytes, std::uint64_t id) {
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != patternByte(id, i)) return false;
  return !bytes.empty();
}

template <typename Predicate> bool waitUntil(Predicate done, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

bool readWithin(int from, void* into, std::size_t bytes, std::chrono::milliseconds limit) {
  pollfd waiting{from, POLLIN, 0};
  return ::poll(&waiting, 1, static_cast<int>(limit.count())) == 1 &&
         ::read(from, into, bytes) == static_cast<ssize_t>(bytes);
}

// A process forked before the test starts any thread; it runs `body` once the
// parent says go, with pipes both ways.
class Child {
public:
  explicit Child(std::function<int(int toParent, int fromParent)> body) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(down[1]);
      ::close(up[0]);
      char go = 0;
      ::_exit(readWithin(down[0], &go, 1, 10s) ? body(up[1], down[0]) : 90);
    }
    ::close(down[0]);
    ::close(up[1]);
    toChild_ = FileDescriptor(down[1]);
    fromChild_ = FileDescriptor(up[0]);
  }
  ~Child() {
    if (pid_ > 0) (void)exitCode(0ms);
  }
  bool started() const { return pid_ > 0; }
  // SIGSTOP, returning once it has taken effect.
  bool stop() {
    int status = 0;
    return ::kill(pid_, SIGSTOP) == 0 &&
           waitUntil([&] { return ::waitpid(pid_, &status, WUNTRACED | WNOHANG) == pid_ && WIFSTOPPED(status); }, 5s);
  }
  void resume() { ::kill(pid_, SIGCONT); }
  void signal() {
    const char byte = 1;
    EXPECT_EQ(::write(toChild_.get(), &byte, 1), 1);
  }
  int fromChild() const { return fromChild_.get(); }
  // Its exit status, or -1 when it has not ended within `limit` (then killed).
  int exitCode(std::chrono::milliseconds limit) {
    int status = 0;
    const bool ended = waitUntil([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (!ended) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    return ended && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

private:
  pid_t pid_ = -1;
  FileDescriptor toChild_, fromChild_;
};

std::vector<device::LentHostBlock> lentOf(const std::vector<ipc::BorrowedHostBlock>& borrowed) {
  std::vector<device::LentHostBlock> lent;
  for (const auto& block : borrowed)
    lent.push_back(block.lent);
  return lent;
}

// The borrower in another process: borrows 3 blocks, checks they are zeroed,
// writes each one's pattern, tells the parent their ids, and on the parent's
// word exits without giving them back.
int borrowWriteAndExit(const std::string& name, int toParent, int fromParent) {
  device::SimBackend backend(embedded::simBackendOptions(smallConfig()));
  ipc::HostBlockBorrower borrower(name, 2s);
  std::vector<ipc::BorrowedHostBlock> borrowed;
  if (!ok(borrower.borrow(kBlockBytes, 3, &borrowed))) return 20;
  if (borrowed.size() != 3 || borrower.borrowedBlocks() != 3) return 21;
  std::vector<device::HostBlock> blocks;
  if (!ok(backend.importHostBlocks(lentOf(borrowed), &blocks)) || blocks.size() != 3) return 22;
  ipc::closeDescriptors(borrowed);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (!allZero({blocks[i].host, blocks[i].bytes})) return 23;
    for (std::size_t at = 0; at < blocks[i].bytes; ++at)
      blocks[i].host[at] = patternByte(borrowed[i].id, at);
  }
  for (const auto& block : borrowed)
    if (::write(toParent, &block.id, sizeof block.id) != sizeof block.id) return 24;
  char done = 0;
  return readWithin(fromParent, &done, 1, 10s) ? 0 : 25;
}

class HostBlockLendingTest : public ::testing::Test {
protected:
  // Made on first use, so that a test can fork first: the simulated device
  // runs a thread per stream, and a child forked beside running threads may
  // inherit a lock one of them held (its own device's threads then wait
  // forever).
  device::SimBackend& backend() {
    if (!backend_) backend_ = std::make_unique<device::SimBackend>(embedded::simBackendOptions(smallConfig()));
    return *backend_;
  }
  ipc::HostBlockLenderOptions options(const std::string& name, std::size_t blocks) const {
    return {name, kBlockBytes, blocks};
  }
  // Imports `borrowed` here and reports whether every byte is zero.
  bool importedAllZero(const std::vector<ipc::BorrowedHostBlock>& borrowed) {
    std::vector<device::HostBlock> blocks;
    if (!ok(backend().importHostBlocks(lentOf(borrowed), &blocks))) return false;
    bool zero = true;
    for (const auto& block : blocks)
      zero = zero && allZero({block.host, block.bytes});
    backend().destroyHostBlocks(blocks);
    return zero;
  }

  std::unique_ptr<device::SimBackend> backend_;
};

TEST_F(HostBlockLendingTest, AnotherProcessWritesTheLendersMemoryAndItsBlocksComeBackZeroedWhenItExits) {
  const std::string name = socketName("exit");
  Child child([&](int up, int down) { return borrowWriteAndExit(name, up, down); }); // before any thread
  ASSERT_TRUE(child.started());
  ipc::HostBlockLender lender(backend(), options(name, 4));
  std::string error;
  ASSERT_EQ(lender.start(&error), Status::Success) << error;
  EXPECT_EQ(lender.blocks(), 4u);
  child.signal();

  std::vector<std::uint64_t> ids(3);
  for (auto& id : ids)
    ASSERT_TRUE(readWithin(child.fromChild(), &id, sizeof id, 10s)) << "child exit " << child.exitCode(0ms);
  EXPECT_EQ(lender.lentBlocks(), 3u);
  EXPECT_EQ(lender.freeBlocks(), 1u);
  for (const std::uint64_t id : ids)
    EXPECT_TRUE(holdsPattern(lender.view(id), id)) << "block " << id << ": the child's writes are the lender's memory";

  child.signal();
  EXPECT_EQ(child.exitCode(10s), 0) << "the child's step that failed (borrowWriteAndExit says which)";
  EXPECT_TRUE(waitUntil([&] { return lender.lentBlocks() == 0; }, 5s)) << "an exited borrower's blocks come back";
  EXPECT_EQ(lender.freeBlocks(), 4u);

  // Lent again, here: the child's bytes are gone.
  ipc::HostBlockBorrower borrower(name, 2s);
  std::vector<ipc::BorrowedHostBlock> borrowed;
  ASSERT_EQ(borrower.borrow(kBlockBytes, 4, &borrowed), Status::Success) << borrower.lastError();
  ASSERT_EQ(borrowed.size(), 4u);
  EXPECT_TRUE(importedAllZero(borrowed));
  for (const std::uint64_t id : ids)
    EXPECT_TRUE(allZero(lender.view(id))) << "block " << id;
  ipc::closeDescriptors(borrowed);
}

TEST_F(HostBlockLendingTest, GivesWhatThereIsTakesBackWhatWasLentHereAndRefusesAnotherSize) {
  const std::string name = socketName("give");
  ipc::HostBlockLender lender(backend(), options(name, 4));
  std::string error;
  ASSERT_EQ(lender.start(&error), Status::Success) << error;
  ipc::HostBlockBorrower borrower(name, 2s);

  std::vector<ipc::BorrowedHostBlock> first, second, none;
  ASSERT_EQ(borrower.borrow(kBlockBytes, 3, &first), Status::Success) << borrower.lastError();
  EXPECT_EQ(first.size(), 3u);
  ASSERT_EQ(borrower.borrow(kBlockBytes, 3, &second), Status::Success) << borrower.lastError();
  EXPECT_EQ(second.size(), 1u) << "more than is free: what there is";
  EXPECT_EQ(lender.lentBlocks(), 4u);
  EXPECT_EQ(lender.freeBlocks(), 0u);
  EXPECT_EQ(borrower.borrow(kBlockBytes, 1, &none), Status::OutOfMemory);
  EXPECT_TRUE(none.empty());
  EXPECT_NE(borrower.lastError().find("no free block"), std::string::npos) << borrower.lastError();
  EXPECT_EQ(borrower.borrow(2 * kBlockBytes, 1, &none), Status::InvalidValue);
  EXPECT_TRUE(none.empty());
  EXPECT_NE(borrower.lastError().find(std::to_string(kBlockBytes)), std::string::npos)
      << "names the pool's block size: " << borrower.lastError();

  // Written here, given back, lent again: zeroed.
  std::vector<device::HostBlock> imported;
  ASSERT_EQ(backend().importHostBlocks(lentOf(first), &imported), Status::Success);
  for (auto& block : imported)
    std::memset(block.host, 0xab, block.bytes);
  backend().destroyHostBlocks(imported);
  const std::vector<std::uint64_t> returning{first[0].id, first[1].id};
  borrower.giveBack(returning);
  EXPECT_TRUE(waitUntil([&] { return lender.lentBlocks() == 2; }, 5s));
  EXPECT_EQ(borrower.borrowedBlocks(), 2u);
  borrower.giveBack(returning); // not held any more: ignored
  const std::vector<std::uint64_t> unknown{12345};
  borrower.giveBack(unknown);
  std::vector<ipc::BorrowedHostBlock> again;
  ASSERT_EQ(borrower.borrow(kBlockBytes, 4, &again), Status::Success) << borrower.lastError();
  EXPECT_EQ(again.size(), 2u);
  EXPECT_TRUE(importedAllZero(again)) << "given-back blocks are zeroed before they are lent again";
  EXPECT_EQ(lender.lentBlocks(), 4u);

  for (auto* blocks : {&first, &second, &again})
    ipc::closeDescriptors(*blocks);
}

// A maker of the simulated device's blocks whose calls after the first
// `passing` wait at a gate until open() (at most 10 s each).
class GatedMaker final : public device::HostBlockMaker {
public:
  GatedMaker(device::HostBlockMaker& inner, int passing) : inner_(inner), passing_(passing) {}
  std::size_t granularity() const override { return inner_.granularity(); }
  Status createLendableHostBlocks(std::size_t bytes, std::size_t count,
                                  std::vector<device::HostBlock>* blocks) override {
    {
      std::unique_lock lock(mutex_);
      if (++calls_ > passing_) opened_.wait_for(lock, 10s, [&] { return open_; });
    }
    return inner_.createLendableHostBlocks(bytes, count, blocks);
  }
  Status exportHostBlock(const device::HostBlock& block, device::LentHostBlock* lent) override {
    return inner_.exportHostBlock(block, lent);
  }
  void destroyHostBlocks(const std::vector<device::HostBlock>& blocks) override { inner_.destroyHostBlocks(blocks); }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  int calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

private:
  device::HostBlockMaker& inner_;
  const int passing_;
  mutable std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
  int calls_ = 0;
};

// A pool of 50 with 2 made at start: the grower makes the rest in chunks of
// 16, but none while a borrower is connected (a chunk already begun ends);
// once the borrower has gone, the rest, and every block lends zeroed.
TEST_F(HostBlockLendingTest, MakesTheRestInTheBackgroundOnlyWhileNoBorrowerIsConnected) {
  const std::string name = socketName("grow");
  GatedMaker maker(backend(), 1); // start()'s call passes; the grower's wait at the gate
  ipc::HostBlockLender lender(maker, {name, kBlockBytes, 50, 2});
  std::string error;
  ASSERT_EQ(lender.start(&error), Status::Success) << error;
  EXPECT_EQ(lender.blocks(), 2u) << "two made at start";
  ASSERT_TRUE(waitUntil([&] { return maker.calls() == 2; }, 5s)) << "the grower's first chunk is begun";
  auto borrower = std::make_unique<ipc::HostBlockBorrower>(name, 2s);
  std::vector<ipc::BorrowedHostBlock> first;
  ASSERT_EQ(borrower->borrow(kBlockBytes, 1, &first), Status::Success) << borrower->lastError();
  maker.open();
  EXPECT_TRUE(waitUntil([&] { return lender.blocks() == 18; }, 5s)) << "the chunk begun ends: " << lender.blocks();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(lender.blocks(), 18u) << "nothing more is made while a borrower is connected";
  EXPECT_EQ(maker.calls(), 2);
  ipc::closeDescriptors(first);
  borrower.reset(); // its connection closes: its block comes back
  EXPECT_TRUE(waitUntil([&] { return lender.blocks() == 50; }, 5s)) << lender.blocks() << " made";
  EXPECT_EQ(maker.calls(), 2 + 2) << "the rest in chunks of 16 at most";
  ASSERT_TRUE(waitUntil([&] { return lender.freeBlocks() == 50; }, 5s));
  ipc::HostBlockBorrower again(name, 2s);
  std::vector<ipc::BorrowedHostBlock> all;
  ASSERT_EQ(again.borrow(kBlockBytes, 50, &all), Status::Success) << again.lastError();
  EXPECT_EQ(all.size(), 50u);
  EXPECT_TRUE(importedAllZero(all)) << "made at start, in the background or given back: zeroed";
  ipc::closeDescriptors(all);
}

// Abstract socket names have no permissions, so either side may meet a
// process of another user: the borrower refuses a lender of another uid (its
// pages' bytes would go into that user's memory) and the lender refuses a
// borrower of another uid (it would read what the node's pool holds). The
// other user is nobody, in a child that only root can make.
TEST_F(HostBlockLendingTest, NothingIsLentOrBorrowedBetweenTwoUsers) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to run a second user (fork and setuid to nobody)";
  constexpr uid_t kNobody = 65534;
  const std::string foreignLender = socketName("foreign-lender");
  const std::string ours = socketName("ours");
  // Both children are forked before this process starts a thread.
  Child lenderOfNobody([&](int toParent, int fromParent) {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) return 30;
    device::SimBackend backend(embedded::simBackendOptions(smallConfig()));
    ipc::HostBlockLender lender(backend, {foreignLender, kBlockBytes, 4});
    std::string error;
    if (!ok(lender.start(&error))) return 31;
    const char ready = 1;
    if (::write(toParent, &ready, 1) != 1) return 32;
    char done = 0;
    if (!readWithin(fromParent, &done, 1, 10s)) return 33;
    return lender.lentBlocks() == 0 ? 0 : 34;
  });
  Child borrowerOfNobody([&](int, int) {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) return 40;
    // A raw request, not HostBlockBorrower, which would refuse root's lender
    // itself before asking.
    const auto address = ipc::abstractAddress(ours);
    FileDescriptor socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!address || !socket.valid() || ::connect(socket.get(), address->get(), address->length) != 0) return 41;
    ipc::detail::Request request;
    request.count = 2;
    request.sequence = 1;
    request.blockBytes = kBlockBytes;
    if (::send(socket.get(), &request, sizeof request, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof request))
      return 0; // already closed on us: refused
    ipc::detail::Answer answer;
    pollfd waiting{socket.get(), POLLIN, 0};
    if (::poll(&waiting, 1, 5000) != 1) return 42; // neither answered nor closed
    const ssize_t got = ::recv(socket.get(), &answer, sizeof answer, 0);
    return got <= 0 ? 0 : 43; // closed (0) or reset: refused; an answer: served
  });
  ASSERT_TRUE(lenderOfNobody.started() && borrowerOfNobody.started());

  lenderOfNobody.signal();
  char ready = 0;
  ASSERT_TRUE(readWithin(lenderOfNobody.fromChild(), &ready, 1, 10s)) << "nobody's lender did not start";
  ipc::HostBlockBorrower borrower(foreignLender, 2s);
  std::vector<ipc::BorrowedHostBlock> borrowed;
  EXPECT_EQ(borrower.borrow(kBlockBytes, 2, &borrowed), Status::NotPermitted);
  EXPECT_TRUE(borrowed.empty());
  EXPECT_NE(borrower.lastError().find("uid 65534"), std::string::npos) << borrower.lastError();
  lenderOfNobody.signal();
  EXPECT_EQ(lenderOfNobody.exitCode(10s), 0) << "30s: nobody's lender failed; 34: it lent blocks";

  ipc::HostBlockLender lender(backend(), options(ours, 4));
  std::string error;
  ASSERT_EQ(lender.start(&error), Status::Success) << error;
  borrowerOfNobody.signal();
  EXPECT_EQ(borrowerOfNobody.exitCode(10s), 0) << "41: no connection; 42: no answer; 43: nobody was served";
  EXPECT_EQ(lender.lentBlocks(), 0u);
  EXPECT_EQ(lender.freeBlocks(), lender.blocks());
}

TEST_F(HostBlockLendingTest, WithoutALenderTheBorrowerSaysNotSupportedAtOnce) {
  ipc::HostBlockBorrower borrower(socketName("nobody"), 2s);
  std::vector<ipc::BorrowedHostBlock> borrowed;
  const auto began = Clock::now();
  EXPECT_EQ(borrower.borrow(kBlockBytes, 2, &borrowed), Status::NotSupported);
  EXPECT_LT(Clock::now() - began, 200ms);
  EXPECT_TRUE(borrowed.empty());
  EXPECT_NE(borrower.lastError().find("no lender listens"), std::string::npos) << borrower.lastError();
}

TEST_F(HostBlockLendingTest, ALenderThatNeverAnswersCostsTheTimeoutAndIsNamed) {
  // A socket that accepts and never answers.
  const std::string name = socketName("mute");
  FileDescriptor listening(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(::bind(listening.get(), reinterpret_cast<const sockaddr*>(&address), length), 0);
  ASSERT_EQ(::listen(listening.get(), 4), 0);
  int release[2];
  ASSERT_EQ(::pipe(release), 0);
  FileDescriptor releaseRead(release[0]), releaseWrite(release[1]);
  std::thread mute([&] {
    pollfd waiting{listening.get(), POLLIN, 0};
    if (::poll(&waiting, 1, 5000) != 1) return;
    FileDescriptor accepted(::accept4(listening.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char byte = 0;
    (void)readWithin(releaseRead.get(), &byte, 1, 5s); // holds the connection, silent
  });

  ipc::HostBlockBorrower borrower(name, 300ms);
  std::vector<ipc::BorrowedHostBlock> borrowed;
  const auto began = Clock::now();
  EXPECT_EQ(borrower.borrow(kBlockBytes, 2, &borrowed), Status::Timeout);
  const auto took = Clock::now() - began;
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 1000ms);
  EXPECT_TRUE(borrowed.empty());
  const std::string said = borrower.lastError();
  EXPECT_NE(said.find("@" + name), std::string::npos) << said;
  EXPECT_NE(said.find("answer a borrow of 2 blocks"), std::string::npos) << said;
  EXPECT_NE(said.find("300 ms"), std::string::npos) << said;
  releaseWrite = FileDescriptor();
  mute.join();
}

TEST_F(HostBlockLendingTest, ALenderStopsPromptlyWithBorrowersConnectedAndItsSuccessorServesThem) {
  const std::string name = socketName("again");
  ipc::HostBlockBorrower borrower(name, 2s);
  std::vector<ipc::BorrowedHostBlock> borrowed;
  std::optional<ipc::HostBlockLender> lender(std::in_place, backend(), options(name, 2));
  std::string error;
  ASSERT_EQ(lender->start(&error), Status::Success) << error;
  ASSERT_EQ(borrower.borrow(kBlockBytes, 1, &borrowed), Status::Success) << borrower.lastError();
  ipc::closeDescriptors(borrowed);
  {
    ipc::HostBlockLender second(backend(), options(name, 1));
    EXPECT_EQ(second.start(&error), Status::NotPermitted) << "one lender per name";
    EXPECT_NE(error.find("another lender"), std::string::npos) << error;
  }
  const auto began = Clock::now();
  lender.reset();
  EXPECT_LT(Clock::now() - began, 1000ms) << "stops at once, its borrower still connected";
  EXPECT_EQ(borrower.borrow(kBlockBytes, 1, &borrowed), Status::NotSupported) << borrower.lastError();
  EXPECT_EQ(borrower.borrowedBlocks(), 0u);

  ipc::HostBlockLender successor(backend(), options(name, 2));
  ASSERT_EQ(successor.start(&error), Status::Success) << error;
  ASSERT_EQ(borrower.borrow(kBlockBytes, 2, &borrowed), Status::Success) << borrower.lastError();
  EXPECT_EQ(borrowed.size(), 2u);
  EXPECT_EQ(successor.lentBlocks(), 2u);
  ipc::closeDescriptors(borrowed);
}

TEST_F(HostBlockLendingTest, AnAnswerThatComesAfterTheTimeoutIsGivenBackNotTakenForTheNextBorrow) {
  // The lender in a process of its own, so that it can be stopped (SIGSTOP)
  // while a borrow waits for it.
  const std::string name = socketName("late");
  Child lenderProcess([&](int up, int down) {
    device::SimBackend backend(embedded::simBackendOptions(smallConfig()));
    ipc::HostBlockLender lender(backend, options(name, 2));
    std::string error;
    if (!ok(lender.start(&error))) return 30;
    const char ready = 1;
    if (::write(up, &ready, 1) != 1) return 31;
    char done = 0;
    return readWithin(down, &done, 1, 20s) ? 0 : 32;
  });
  ASSERT_TRUE(lenderProcess.started());
  lenderProcess.signal();
  char ready = 0;
  ASSERT_TRUE(readWithin(lenderProcess.fromChild(), &ready, 1, 10s));

  ipc::HostBlockBorrower borrower(name, 300ms);
  std::vector<ipc::BorrowedHostBlock> first, late, second;
  ASSERT_EQ(borrower.borrow(kBlockBytes, 1, &first), Status::Success) << borrower.lastError();
  ASSERT_TRUE(lenderProcess.stop());
  EXPECT_EQ(borrower.borrow(kBlockBytes, 1, &late), Status::Timeout);
  EXPECT_TRUE(late.empty());
  lenderProcess.resume();
  // The lender now lends its last block to the borrow that gave up and has
  // none for this one; the late block goes back...
  EXPECT_EQ(borrower.borrow(kBlockBytes, 1, &second), Status::OutOfMemory) << borrower.lastError();
  EXPECT_EQ(borrower.borrowedBlocks(), 1u);
  // ...and is lent again.
  ASSERT_EQ(borrower.borrow(kBlockBytes, 1, &second), Status::Success) << borrower.lastError();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0].id, first[0].id);
  EXPECT_EQ(borrower.borrowedBlocks(), 2u);
  ipc::closeDescriptors(first);
  ipc::closeDescriptors(second);
  lenderProcess.signal();
  EXPECT_EQ(lenderProcess.exitCode(10s), 0);
}

} // namespace
} // namespace mqx::test
