// ChildProcess: a program the test starts (fork/exec) with extra environment
// variables, its stdout readable through a pipe. RAII: a child still running
// when the object goes is killed (SIGKILL) and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mqx::test {

class ChildProcess {
public:
  // With `mergeStandardError`, the child's stderr goes to the same pipe as
  // its stdout (for tests that read its log lines).
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment,
               bool mergeStandardError = false);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int number);
  // The wait status' meaning: exit code, or 128 + signal. nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // Reads stdout until `line` appears as a whole line; false on EOF/timeout.
  bool waitForLine(const std::string& line, std::chrono::milliseconds timeout);
  // Reads stdout until a line "NAME VALUE" appears; VALUE, or nullopt on
  // EOF/timeout (the counters sim_client prints).
  std::optional<std::uint64_t> waitForCounter(const std::string& name, std::chrono::milliseconds timeout);
  // Reads stdout until a line containing `text` appears; that line, or
  // nullopt on EOF/timeout.
  std::optional<std::string> waitForLineContaining(const std::string& text, std::chrono::milliseconds timeout);
  // Everything the child writes to stdout until it closes it (it exited) or
  // `timeout` passes, after what earlier waits consumed.
  std::string readRest(std::chrono::milliseconds timeout);

private:
  std::optional<std::string> waitForMatch(const std::function<bool(const std::string&)>& matches,
                                          std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int stdout_ = -1;
  bool reaped_ = false;
  std::string buffered_;
};

} // namespace mqx::test
