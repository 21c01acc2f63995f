#include "query_process.hpp"

#include <atomic>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/log.hpp"
#include "ipc/node_state.hpp"
#include "ipc/query_admission_gate.hpp"

namespace mqx::daemon {
namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// Lock-free atomics (async-signal-safe), sequentially consistent: a signal
// that comes while the query is being started (its admission seen, its
// process not yet) is kept in pendingSignal and sent once it exists, by
// whichever of the handler and start() comes second. Without this it was
// lost and the query ran on (a CI run of
// RunAdmissionTest.AProgramThatEndsWhileItWaitsEndsTheWaitWithItsStatus).
std::atomic<pid_t> childPid{0};
std::atomic<int> pendingSignal{0};
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

void sendPending() {
  const pid_t child = childPid.load();
  if (child <= 0) return;
  if (const int signal = pendingSignal.exchange(0); signal != 0) kill(-child, signal);
}

void forwardSignal(int signal) {
  if (const pid_t child = childPid.load(); child > 0) {
    kill(-child, signal);
    return;
  }
  pendingSignal.store(signal);
  sendPending(); // start() may have set the child meanwhile, after its own look
}

void forwardSignals() {
  struct sigaction forward {};
  forward.sa_handler = forwardSignal;
  sigemptyset(&forward.sa_mask);
  for (int signal : kForwardedSignals)
    sigaction(signal, &forward, nullptr);
}

// libmqx.so: MQX_LIBRARY, else next to this executable (build tree: bin/ and
// lib/; install: bin/ and lib/).
std::string findLibrary() {
  if (const char* explicitPath = std::getenv("MQX_LIBRARY"); explicitPath != nullptr && *explicitPath != '\0')
    return explicitPath;
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  for (const char* relative : {"../lib/libmqx.so", "libmqx.so"}) {
    const auto candidate = self.parent_path() / relative;
    if (std::filesystem::exists(candidate, error)) return std::filesystem::weakly_canonical(candidate, error).string();
  }
  return {};
}

// A query in a process group of its own is not in the terminal's
// foreground: when mqx-run is, the query's group takes the terminal, so
// that it may read it and Ctrl-C reaches it, and mqx-run takes it back when
// the query ends.
pid_t terminalGivenBy = 0;

void takeTerminal(pid_t child) {
  if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp()) return;
  signal(SIGTTOU, SIG_IGN); // a background mqx-run asking for the terminal back is not stopped
  if (tcsetpgrp(STDIN_FILENO, child) == 0) terminalGivenBy = getpgrp();
}

void giveTerminalBack() {
  if (terminalGivenBy == 0) return;
  tcsetpgrp(STDIN_FILENO, terminalGivenBy);
  terminalGivenBy = 0;
}

int exitStatusOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

} // namespace

pid_t QueryProcess::start(std::uint32_t querySlot, const std::string& device, bool awaitAdmission) {
  const std::string library = findLibrary();
  if (library.empty())
    log(LogLevel::Warn, "mqx-run: libmqx.so not found (set MQX_LIBRARY); running the query without it");
  forwardSignals();
  const pid_t child = fork();
  if (child < 0) {
    std::perror("mqx-run: fork");
    return -1;
  }
  if (child == 0) {
    setpgid(0, 0); // its own process group (forwardSignal)
    for (int signal : kForwardedSignals)
      ::signal(signal, SIG_DFL);
    // One forwarded before those lines ran the inherited handler here and was kept.
    if (const int signal = pendingSignal.exchange(0); signal != 0) ::raise(signal);
    if (!library.empty()) {
      const char* previous = std::getenv("LD_PRELOAD");
      std::string preload = library + (previous != nullptr && *previous != '\0' ? std::string(":") + previous : "");
      setenv("LD_PRELOAD", preload.c_str(), 1);
    }
    if (querySlot != ipc::kNoSlot) setenv("MQX_QUERY_SLOT", std::to_string(querySlot).c_str(), 1);
    if (awaitAdmission) setenv("MQX_AWAIT_ADMISSION", std::to_string(getppid()).c_str(), 1);
    ipc::exportPlacedDevice(device);
    execvp(command_[0], command_.data());
    std::fprintf(stderr, "mqx-run: cannot run '%s': %s\n", command_[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child); // also here: whichever runs first, the group exists before a signal is sent to it
  takeTerminal(child);
  childPid.store(child);
  sendPending();
  return child;
}

int QueryProcess::wait(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  childPid.store(0);
  giveTerminalBack();
  return exitStatusOf(status);
}

std::optional<int> QueryProcess::ended(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) != pid) return std::nullopt;
  childPid.store(0);
  giveTerminalBack();
  return exitStatusOf(status);
}

void QueryProcess::stop(pid_t pid) {
  kill(-pid, SIGTERM); // the whole group: processes the query started too
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ended(pid)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "mqx-run: query '%s' (pid %d) did not stop within 5 s of SIGTERM; killing it\n", name_.c_str(),
               static_cast<int>(pid));
  kill(-pid, SIGKILL);
  wait(pid);
}

int QueryProcess::run(std::uint32_t querySlot, const std::string& device) {
  const pid_t child = start(querySlot, device, false);
  return child < 0 ? -1 : wait(child);
}

} // namespace mqx::daemon
