// The SSB programs' command line (ssb/common/command_line.hpp): options and
// their values are handed out in order, and every refusal is one line naming
// the option, exit status 2, in the style the program asked for. Each refusal
// runs in a child process (a death test), since it ends the program.
#include "ssb/common/command_line.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mqx::ssb {
namespace {

constexpr std::string_view kUsage = "usage: ssb-test [--data DIR] [--threads N] [--check]\n";

// argv for CommandLine: the program's name, then `arguments`.
class Arguments {
public:
  explicit Arguments(std::vector<std::string> arguments) : storage_(std::move(arguments)) {
    storage_.insert(storage_.begin(), "ssb-test");
    for (std::string& argument : storage_)
      pointers_.push_back(argument.data());
    pointers_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(storage_.size()); }
  char** argv() { return pointers_.data(); }

private:
  std::vector<std::string> storage_;
  std::vector<char*> pointers_;
};

struct Parsed {
  std::string data;
  std::optional<int> threads;
  bool check = false;
};

// The parse of a program with --data DIR, --threads N (N >= 1, `expected`
// naming it in refusals unless empty) and --check.
Parsed parse(std::vector<std::string> arguments, CommandLine::ErrorStyle style = CommandLine::ErrorStyle::PointToHelp,
             std::string_view expected = {}) {
  Arguments argv(std::move(arguments));
  CommandLine commandLine(argv.argc(), argv.argv(), "ssb-test", std::string(kUsage), style);
  Parsed parsed;
  while (commandLine.next()) {
    const std::string_view argument = commandLine.argument();
    if (argument == "--data")
      parsed.data = commandLine.value();
    else if (argument == "--threads")
      parsed.threads = commandLine.integer(1, expected);
    else if (argument == "--check")
      parsed.check = true;
    else
      commandLine.fail("unknown argument '" + std::string(argument) + "'");
  }
  return parsed;
}

// A POSIX extended regular expression that matches `text` literally (death
// tests match stderr against a regular expression).
std::string literally(std::string_view text) {
  std::string pattern;
  for (char c : text) {
    if (std::string_view("\\.^$|()[]{}*+?").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  return pattern;
}

TEST(CommandLineTest, HandsOutOptionsAndValuesInOrder) {
  const Parsed parsed = parse({"--threads", "3", "--check", "--data", "/tmp/ssb", "--threads", "12"});
  EXPECT_EQ(parsed.data, "/tmp/ssb");
  EXPECT_EQ(parsed.threads, 12);
  EXPECT_TRUE(parsed.check);
  const Parsed none = parse({});
  EXPECT_EQ(none.data, "");
  EXPECT_FALSE(none.threads.has_value());
  EXPECT_FALSE(none.check);
  // A value is the next argument, whatever it looks like.
  EXPECT_EQ(parse({"--data", "--help"}).data, "--help");
  EXPECT_EQ(parse({"--threads", "1"}).threads, 1);
}

TEST(CommandLineDeathTest, RefusedIntegerNamesTheOptionAndTheText) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const char* text : {"x", "0", "-2", "3x", "", " 4", "99999999999"})
    EXPECT_EXIT(parse({"--threads", text}), ::testing::ExitedWithCode(2),
                "^" +
                    literally("ssb-test: --threads: expected an integer of at least 1, got '" + std::string(text) +
                              "' (try --help)\n") +
                    "$")
        << "'" << text << "'";
  EXPECT_EXIT(parse({"--threads", "0"}, CommandLine::ErrorStyle::PointToHelp, "a positive count"),
              ::testing::ExitedWithCode(2),
              "^" + literally("ssb-test: --threads: expected a positive count, got '0' (try --help)\n") + "$");
}

TEST(CommandLineDeathTest, MissingValueNamesTheOption) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse({"--check", "--data"}), ::testing::ExitedWithCode(2),
              "^" + literally("ssb-test: --data needs a value (try --help)\n") + "$");
  EXPECT_EXIT(parse({"--threads"}), ::testing::ExitedWithCode(2),
              "^" + literally("ssb-test: --threads needs a value (try --help)\n") + "$");
}

TEST(CommandLineDeathTest, PrintUsageStyleFollowsTheLineWithTheUsage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse({"--data"}, CommandLine::ErrorStyle::PrintUsage), ::testing::ExitedWithCode(2),
              "^" + literally("ssb-test: --data needs a value\n" + std::string(kUsage)) + "$");
  EXPECT_EXIT(parse({"--verbose"}, CommandLine::ErrorStyle::PrintUsage), ::testing::ExitedWithCode(2),
              "^" + literally("ssb-test: unknown argument '--verbose'\n" + std::string(kUsage)) + "$");
}

TEST(CommandLineDeathTest, HelpExitsZeroWhereItStands) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse({"--check", "--help", "--threads", "x"}), ::testing::ExitedWithCode(0), "^$");
  EXPECT_EXIT(parse({"-h"}), ::testing::ExitedWithCode(0), "^$");
  // Arguments before --help are parsed, and refused, first.
  EXPECT_EXIT(parse({"--threads", "x", "--help"}), ::testing::ExitedWithCode(2), "--threads: expected");
}

} // namespace
} // namespace mqx::ssb
