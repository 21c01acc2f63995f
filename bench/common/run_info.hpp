// Where and when a benchmark ran, for its results file: every committed
// number names the run that produced it.
#pragma once

#include <cstdio>
#include <ctime>
#include <string>

namespace mqx::bench {

// Standard output of a shell command, without its trailing newlines.
inline std::string commandOutput(const char* command) {
  std::string output;
  if (FILE* pipe = ::popen(command, "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr)
      output += buffer;
    ::pclose(pipe);
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r'))
    output.pop_back();
  return output;
}

inline std::string gitCommit() { return commandOutput("git rev-parse --short HEAD 2>/dev/null"); }

inline std::string runHost() { return commandOutput("uname -m") + ", " + commandOutput("nproc") + " cores"; }

inline std::string utcNow() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

// Where and when a run happened: the first fields of its results file.
struct RunInfo {
  std::string host;
  std::string date;
  std::string commit;
};

inline RunInfo thisRun() { return {runHost(), utcNow(), gitCommit()}; }

} // namespace mqx::bench
