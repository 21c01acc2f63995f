// mqxd: the node daemon (docs/daemon.md). Runs in the foreground until
// SIGTERM or SIGINT, then removes the node's segment and queues.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "common/log.hpp"
#include "config/config.hpp"
#include "node_daemon.hpp"

namespace {
std::atomic<bool> stopRequested{false};
void requestStop(int) { stopRequested.store(true); }
} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: mqxd\n  the node daemon of mqx; configured by MQX_CONFIG and MQX_* (configs/default.toml,"
                  " [daemon])\n");
      return 0;
    }
    std::fprintf(stderr, "mqxd: unknown argument '%s' (try --help)\n", argv[i]);
    return 2;
  }
  try {
    const mqx::Config config = mqx::loadConfig();
    mqx::setLogLevel(config.logLevel);
    struct sigaction action {};
    action.sa_handler = requestStop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    signal(SIGPIPE, SIG_IGN);
    mqx::daemon::NodeDaemon daemon(config);
    std::printf("mqxd: ready (%s)\n", daemon.names().segment.c_str());
    std::fflush(stdout);
    daemon.run(stopRequested);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "mqxd: %s\n", error.what());
    return 1;
  }
}
