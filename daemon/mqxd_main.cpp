// mqxd: the node daemon (docs/daemon.md). Runs in the foreground until
// SIGTERM, SIGINT, SIGQUIT or SIGHUP (a closed terminal), then removes the
// node's segment and queues; SIGUSR1, SIGUSR2 and SIGALRM are ignored.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "common/log.hpp"
#include "config/config.hpp"
#include "host_block_pool.hpp"
#include "mqx/version.hpp"
#include "node_daemon.hpp"

namespace {
// Written by the signal handler, read by the loop: a signal handler has no
// other way to reach it.
std::atomic<bool> stopRequested{false};
std::atomic<int> stopSignal{0};
void requestStop(int signal) {
  stopSignal.store(signal);
  stopRequested.store(true);
}
} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("mqxd %s (commit %s)\n", mqx::kVersion, mqx::kCommit);
      return 0;
    }
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: mqxd [--version]\n  the node daemon of mqx; configured by MQX_CONFIG and MQX_*"
                  " (configs/default.toml, [daemon])\n");
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
    // SIGHUP (the terminal closed) is a clean exit too, not a reload: the
    // segment's capacity is what admitted queries were counted against
    // (docs/daemon.md, "Signals").
    sigaction(SIGHUP, &action, nullptr);
    // SIGQUIT asks a program to quit: a clean exit too. The other signals
    // whose default is to end the process mean nothing to mqxd and are
    // ignored, so that a stray `kill -USR1` or an alarm never leaves the
    // node's segment and queue behind (docs/daemon.md, "Signals").
    sigaction(SIGQUIT, &action, nullptr);
    for (int ignored : {SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM})
      signal(ignored, SIG_IGN);
    // The instance's lock before the pool, so that a second mqxd refuses
    // before it pins host memory beside the first.
    // The pool's socket has the node's names, which need no NodeDaemon; no
    // client registers before the segment exists, and none runs before
    // "ready". The node goes first at exit, then the pool.
    const mqx::ipc::IpcNames names = mqx::ipc::IpcNames::forInstance(config.daemonInstance, getuid());
    if (!names.problem.empty()) throw std::runtime_error(names.problem);
    mqx::daemon::NodeDaemonOptions options;
    options.instanceLock = mqx::daemon::lockInstance(names);
    const auto hostBlocks = mqx::daemon::NodeHostBlockPool::start(config, names.hostBlockPool);
    if (hostBlocks != nullptr) mqx::log(mqx::LogLevel::Info, "mqxd: {}", hostBlocks->describe());
    mqx::daemon::NodeDaemon daemon(config, std::move(options));
    std::printf("mqxd: ready (%s)\n", daemon.names().segment.c_str());
    std::fflush(stdout);
    daemon.run(stopRequested);
    if (const int signal = stopSignal.load(); signal != 0)
      mqx::log(mqx::LogLevel::Info, "mqxd: stopped by SIG{}", sigabbrev_np(signal));
    return 0;
  } catch (const mqx::daemon::SegmentDamaged& error) {
    std::fprintf(stderr, "mqxd: %s; exiting\n", error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "mqxd: %s\n", error.what());
    return 1;
  }
}
