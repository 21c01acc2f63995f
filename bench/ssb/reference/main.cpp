// ssb-reference: runs SSB queries on the CPU and prints their canonical
// results.
//   ssb-reference --data DIR --query q1.1   (or --query all)
#include "ssb/common/column_cache.hpp"
#include "ssb/common/command_line.hpp"
#include "ssb/common/ssb_data.hpp"
#include "ssb/reference/reference_queries.hpp"

#include <fmt/core.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view kUsage = "usage: ssb-reference --data DIR --query NAME [--sql] [--quiet]\n"
                                    "  --data DIR    a directory written by ssb-datagen\n"
                                    "  --query NAME  q1.1 .. q4.3, or all\n"
                                    "  --sql         print each query's SQL before its result\n"
                                    "  --quiet       no timings on stderr\n";

struct Arguments {
  std::string dataDir;
  std::vector<mqx::ssb::QueryId> queries;
  bool printSql = false;
  bool quiet = false;
};

std::vector<mqx::ssb::QueryId> parseQueries(const mqx::ssb::CommandLine& commandLine, std::string_view name) {
  if (name == "all") return {mqx::ssb::kAllQueries.begin(), mqx::ssb::kAllQueries.end()};
  if (auto query = mqx::ssb::parseQueryName(name)) return {*query};
  commandLine.fail("unknown query " + std::string(name));
}

Arguments parseArguments(int argc, char** argv) {
  Arguments args;
  mqx::ssb::CommandLine commandLine(argc, argv, "ssb-reference", std::string(kUsage),
                                    mqx::ssb::CommandLine::ErrorStyle::PrintUsage);
  while (commandLine.next()) {
    std::string_view flag = commandLine.argument();
    if (flag == "--data")
      args.dataDir = commandLine.value();
    else if (flag == "--query")
      args.queries = parseQueries(commandLine, commandLine.value());
    else if (flag == "--sql")
      args.printSql = true;
    else if (flag == "--quiet")
      args.quiet = true;
    else
      commandLine.fail("unknown argument " + std::string(flag));
  }
  if (args.dataDir.empty()) commandLine.fail("--data is required");
  if (args.queries.empty()) commandLine.fail("--query is required");
  return args;
}

} // namespace

int main(int argc, char** argv) {
  Arguments args = parseArguments(argc, argv);
  try {
    mqx::ssb::SsbData data = mqx::ssb::SsbData::open(args.dataDir);
    mqx::ssb::ColumnCache cache(data);
    for (mqx::ssb::QueryId query : args.queries) {
      const auto& info = mqx::ssb::queryInfo(query);
      auto start = std::chrono::steady_clock::now();
      mqx::ssb::QueryResult result = mqx::ssb::runReferenceQuery(query, cache);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      fmt::print("-- {}\n", info.name);
      if (args.printSql) fmt::print("-- {}\n", info.sql);
      fmt::print("{}", mqx::ssb::formatResult(result));
      if (!args.quiet)
        fmt::print(stderr, "{}: {} rows, {:.1f} ms (loads included)\n", info.name, result.rows.size(), ms);
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "ssb-reference: {}\n", error.what());
    return 1;
  }
  return 0;
}
