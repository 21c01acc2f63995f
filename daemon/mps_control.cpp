#include "mps_control.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/log.hpp"

extern char** environ;

namespace mqx::daemon {
namespace {

std::string fromEnvironment(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// A daemon that stops answering must not stall mqxd's start or shutdown.
constexpr int kStartMilliseconds = 10'000;
constexpr int kStopMilliseconds = 10'000;

} // namespace

MpsControl::MpsControl(const Config& config)
    : mode_(config.mps), control_(config.mpsControl),
      pipeDirectory_(!config.mpsPipeDirectory.empty() ? config.mpsPipeDirectory
                                                      : fromEnvironment("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")),
      logDirectory_(!config.mpsLogDirectory.empty() ? config.mpsLogDirectory
                                                    : fromEnvironment("CUDA_MPS_LOG_DIRECTORY", "")) {
  if (mode_ == MpsMode::Off) return;
  if (running()) {
    log(LogLevel::Info,
        "mqxd: MPS control daemon running (pipe directory {}): kernels of different processes run "
        "concurrently",
        pipeDirectory_);
    return;
  }
  if (mode_ == MpsMode::Detect) {
    log(LogLevel::Warn,
        "mqxd: no MPS control daemon in {} (daemon.mps = \"detect\"): kernels of different processes "
        "are time-sliced, not concurrent",
        pipeDirectory_);
    return;
  }
  start();
}

MpsControl::~MpsControl() {
  if (startedHere_) stop();
}

bool MpsControl::running() const {
  struct stat info {};
  const std::string pipe = pipeDirectory_ + "/control";
  return stat(pipe.c_str(), &info) == 0 && S_ISFIFO(info.st_mode);
}

int MpsControl::runControl(const std::string& argument, const std::string& input) const {
  // The control daemon and its clients meet in these directories.
  std::vector<std::string> variables;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "CUDA_MPS_PIPE_DIRECTORY=", 24) == 0) continue;
    if (std::strncmp(*entry, "CUDA_MPS_LOG_DIRECTORY=", 23) == 0) continue;
    variables.emplace_back(*entry);
  }
  variables.push_back("CUDA_MPS_PIPE_DIRECTORY=" + pipeDirectory_);
  if (!logDirectory_.empty()) variables.push_back("CUDA_MPS_LOG_DIRECTORY=" + logDirectory_);
  std::vector<char*> environment;
  for (std::string& variable : variables)
    environment.push_back(variable.data());
  environment.push_back(nullptr);
  std::vector<std::string> words{control_};
  if (!argument.empty()) words.push_back(argument);
  std::vector<char*> argv;
  for (std::string& word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);

  int toChild[2];
  if (pipe2(toChild, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, toChild[0], STDIN_FILENO);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, control_.c_str(), &actions, nullptr, argv.data(), environment.data());
  posix_spawn_file_actions_destroy(&actions);
  close(toChild[0]);
  if (spawned != 0) {
    close(toChild[1]);
    log(LogLevel::Error, "mqxd: cannot run '{}' (daemon.mps_control): {}", control_, std::strerror(spawned));
    return -1;
  }
  if (!input.empty() && write(toChild[1], input.data(), input.size()) < 0)
    log(LogLevel::Warn, "mqxd: writing to '{}' failed: {}", control_, std::strerror(errno));
  close(toChild[1]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool MpsControl::waitUntil(bool wantRunning, int milliseconds) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  while (running() != wantRunning) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void MpsControl::start() {
  // "-d" forks the control daemon and returns.
  const int status = runControl("-d", "");
  if (status != 0)
    throw std::runtime_error("daemon.mps_control: '" + control_ + " -d' failed (exit status " + std::to_string(status) +
                             ")");
  if (!waitUntil(true, kStartMilliseconds))
    throw std::runtime_error("daemon.mps_control: '" + control_ + " -d' started no control daemon in " +
                             pipeDirectory_ + " (daemon.mps_pipe_directory)");
  startedHere_ = true;
  log(LogLevel::Info, "mqxd: started the MPS control daemon (pipe directory {})", pipeDirectory_);
}

void MpsControl::stop() {
  const int status = runControl("", "quit\n");
  if (status != 0 || !waitUntil(false, kStopMilliseconds)) {
    log(LogLevel::Warn, "mqxd: the MPS control daemon it started in {} did not stop (exit status {})", pipeDirectory_,
        status);
    return;
  }
  log(LogLevel::Info, "mqxd: stopped the MPS control daemon it started");
}

} // namespace mqx::daemon
