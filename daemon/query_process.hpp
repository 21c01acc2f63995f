// QueryProcess: mqx-run's child, the query's program, run with libmqx.so
// preloaded (MQX_LIBRARY, else ../lib/libmqx.so beside mqx-run) in a process
// group of its own (its pid), so that a signal mqx-run receives, and the
// timeout's SIGTERM and SIGKILL, reach every process the query started. A
// query started in the terminal's foreground takes the terminal while it
// runs (as a shell gives it to a job) and gives it back when it ends.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run_admission.hpp"

namespace mqx::daemon {

class QueryProcess final : public QueryProgram {
public:
  // `command` is the program and its arguments, null-terminated for execvp;
  // `name` the query's, for messages.
  QueryProcess(std::vector<char*> command, std::string name)
      : command_(std::move(command)), name_(std::move(name)) {}

  pid_t start(std::uint32_t querySlot, const std::string& device, bool awaitAdmission) override;
  std::optional<int> ended(pid_t pid) override;
  // SIGTERM to the query's group, and SIGKILL after 5 s.
  void stop(pid_t pid) override;

  // Waits for the program to end: its exit status (128 + the signal that
  // ended it).
  int wait(pid_t pid);
  // Starts the query once admitted (or alone) and waits for it: its exit
  // status, or -1 when it could not be started.
  int run(std::uint32_t querySlot, const std::string& device);

private:
  std::vector<char*> command_;
  std::string name_;
};

} // namespace mqx::daemon
