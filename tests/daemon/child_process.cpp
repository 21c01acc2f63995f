#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace mqx::test {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment,
                           bool mergeStandardError) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [key, value] : environment)
    merged[key] = value;
  std::vector<std::string> envText;
  for (const auto& [key, value] : merged)
    envText.push_back(key + "=" + value);
  std::vector<char*> envp, args;
  for (auto& text : envText)
    envp.push_back(text.data());
  envp.push_back(nullptr);
  std::vector<std::string> argvCopy = argv;
  for (auto& text : argvCopy)
    args.push_back(text.data());
  args.push_back(nullptr);

  int pipeEnds[2];
  if (pipe2(pipeEnds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    dup2(pipeEnds[1], STDOUT_FILENO);
    if (mergeStandardError) dup2(pipeEnds[1], STDERR_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(pipeEnds[1]);
  stdout_ = pipeEnds[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (stdout_ >= 0) close(stdout_);
}

void ChildProcess::signal(int number) {
  if (!reaped_) kill(pid_, number);
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reaped_ = true;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

bool ChildProcess::waitForLine(const std::string& line, std::chrono::milliseconds timeout) {
  return waitForMatch([&](const std::string& candidate) { return candidate == line; }, timeout).has_value();
}

std::optional<std::uint64_t> ChildProcess::waitForCounter(const std::string& name, std::chrono::milliseconds timeout) {
  const std::string prefix = name + " ";
  auto line = waitForMatch([&](const std::string& candidate) { return candidate.starts_with(prefix); }, timeout);
  if (!line) return std::nullopt;
  return std::strtoull(line->c_str() + prefix.size(), nullptr, 10);
}

std::optional<std::string> ChildProcess::waitForLineContaining(const std::string& text,
                                                               std::chrono::milliseconds timeout) {
  return waitForMatch([&](const std::string& candidate) { return candidate.find(text) != std::string::npos; }, timeout);
}

std::string ChildProcess::readRest(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd entry{stdout_, POLLIN, 0};
    if (poll(&entry, 1, static_cast<int>(left.count())) <= 0) break;
    char chunk[4096];
    const ssize_t got = read(stdout_, chunk, sizeof chunk);
    if (got <= 0) break;
    buffered_.append(chunk, static_cast<std::size_t>(got));
  }
  return std::exchange(buffered_, std::string());
}

std::optional<std::string> ChildProcess::waitForMatch(const std::function<bool(const std::string&)>& matches,
                                                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::size_t start = 0;
    for (std::size_t end; (end = buffered_.find('\n', start)) != std::string::npos; start = end + 1) {
      std::string candidate = buffered_.substr(start, end - start);
      if (matches(candidate)) {
        buffered_.erase(0, end + 1);
        return candidate;
      }
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd entry{stdout_, POLLIN, 0};
    if (poll(&entry, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char chunk[256];
    const ssize_t got = read(stdout_, chunk, sizeof chunk);
    if (got <= 0) return std::nullopt;
    buffered_.append(chunk, static_cast<std::size_t>(got));
  }
}

} // namespace mqx::test
