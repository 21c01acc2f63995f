// ssb-loader: keeps an SSB data directory's columns in shared memory for
// query processes (ssb-qX.Y --shared NAME), as a database keeps its buffer
// pool, so that a query process's time goes to its GPU work.
//
//   ssb-loader --data DIR --name NAME [--threads N] [--no-reference]
//   ssb-loader --stop --name NAME
//
// Reads every column of DIR into the store NAME, computes the CPU
// reference's result of each of the 13 queries over the stored columns (a
// query's --check compares with it instead of running the reference itself),
// publishes the store, prints one "ready" line and keeps the store until
// SIGTERM, SIGINT, SIGHUP or `ssb-loader --stop --name NAME`; then removes
// it (queries that mapped it keep their mapping). Errors exit 2 with one line.
#include "ssb/common/column_cache.hpp"
#include "ssb/common/command_line.hpp"
#include "ssb/common/error.hpp"
#include "ssb/common/shared_column_store.hpp"
#include "ssb/common/ssb_data.hpp"
#include "ssb/reference/query_result.hpp"
#include "ssb/reference/reference_queries.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using namespace mqx::ssb;
using Clock = std::chrono::steady_clock;

// Room for the 13 results' texts (a few kB each at any scale factor).
constexpr std::size_t kReferenceTextBytes = 4u << 20;
constexpr auto kStopPollInterval = std::chrono::milliseconds(100);

const char* const kUsage = "usage: ssb-loader --data DIR --name NAME [--threads N] [--no-reference]\n"
                           "       ssb-loader --stop --name NAME\n"
                           "  keeps the columns of DIR (ssb-datagen) in shared memory as store NAME for\n"
                           "  ssb-qX.Y --shared NAME, with the CPU reference's result of every query, until\n"
                           "  SIGTERM, SIGINT, SIGHUP or --stop.\n";

struct Options {
  std::string dataDir;
  std::string name;
  bool stop = false;
  bool reference = true;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  int publishDelayMilliseconds = 0; // tests: a loader that is slow to finish
};

Options parse(int argc, char** argv) {
  Options options;
  CommandLine commandLine(argc, argv, "ssb-loader", kUsage);
  while (commandLine.next()) {
    const std::string_view argument = commandLine.argument();
    if (argument == "--data") {
      options.dataDir = commandLine.value();
    } else if (argument == "--name") {
      options.name = commandLine.value();
    } else if (argument == "--stop") {
      options.stop = true;
    } else if (argument == "--no-reference") {
      options.reference = false;
    } else if (argument == "--threads") {
      options.threads = static_cast<unsigned>(commandLine.integer(1));
    } else if (argument == "--publish-delay-ms") {
      options.publishDelayMilliseconds = commandLine.integer(0);
    } else {
      commandLine.fail("unknown argument '" + std::string(argument) + "'");
    }
  }
  if (options.name.empty()) commandLine.fail("--name NAME is required");
  if (!options.stop && options.dataDir.empty()) commandLine.fail("--data DIR is required");
  return options;
}

// The reference's result of every query over the stored columns, `threads`
// queries at a time (each thread with its own cache: views, no copies).
void storeReferenceResults(SharedColumnStore& store, const SsbData& data, unsigned threads) {
  std::vector<std::string> texts(kAllQueries.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failures(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      try {
        ColumnCache cache(data, store);
        for (std::size_t q = next++; q < kAllQueries.size(); q = next++)
          texts[q] = formatResult(runReferenceQuery(kAllQueries[q], cache));
      } catch (...) {
        failures[t] = std::current_exception();
      }
    });
  for (std::thread& worker : workers)
    worker.join();
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
  for (std::size_t q = 0; q < kAllQueries.size(); ++q)
    store.putText(queryName(kAllQueries[q]), texts[q]);
}

int serve(const Options& options) {
  // Blocked before any thread starts, so every thread inherits the mask and
  // the signals wait for sigtimedwait below.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  for (int signal : {SIGTERM, SIGINT, SIGHUP})
    sigaddset(&stopSignals, signal);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  const auto start = Clock::now();
  SsbData data = SsbData::open(options.dataDir);
  SharedColumnStore store = SharedColumnStore::create(options.name, data, kReferenceTextBytes);
  const auto loaded = Clock::now();
  if (options.reference) storeReferenceResults(store, data, options.threads);
  const auto referenced = Clock::now();
  if (options.publishDelayMilliseconds > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(options.publishDelayMilliseconds));
  store.publish();
  using Milliseconds = std::chrono::duration<double, std::milli>;
  std::printf("ssb-loader: store %s ready: %zu columns, %.1f MiB, SF %g seed %llu from %s, "
              "pid %d, loaded in %.0f ms, reference results in %.0f ms\n",
              options.name.c_str(), store.columnCount(), static_cast<double>(store.bytes()) / (1 << 20),
              store.scaleFactor(), static_cast<unsigned long long>(store.seed()), store.dataDirectory().c_str(),
              static_cast<int>(::getpid()), Milliseconds(loaded - start).count(),
              Milliseconds(referenced - loaded).count());
  std::fflush(stdout);

  const timespec poll{0, std::chrono::nanoseconds(kStopPollInterval).count()};
  for (;;) {
    int signal = sigtimedwait(&stopSignals, nullptr, &poll);
    if (signal > 0) {
      std::printf("ssb-loader: store %s: signal %d, removing it\n", options.name.c_str(), signal);
      break;
    }
    if (store.stopRequested()) {
      std::printf("ssb-loader: store %s: asked to stop, removing it\n", options.name.c_str());
      break;
    }
  }
  std::fflush(stdout);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  try {
    if (options.stop) {
      if (!SharedColumnStore::requestStop(options.name)) {
        std::fprintf(stderr, "ssb-loader: no shared column store named %s\n", options.name.c_str());
        return 1;
      }
      return 0;
    }
    return serve(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ssb-loader: %s\n", error.what());
    return 2;
  }
}
