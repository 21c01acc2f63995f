#include "ssb/common/command_line.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <utility>

namespace mqx::ssb {

CommandLine::CommandLine(int argc, char** argv, std::string program, std::string usage, ErrorStyle style)
    : argc_(argc), argv_(argv), program_(std::move(program)), usage_(std::move(usage)), style_(style) {}

bool CommandLine::next() {
  if (++index_ >= argc_) return false;
  if (argument() == "--help" || argument() == "-h") {
    std::fputs(usage_.c_str(), stdout);
    std::exit(0);
  }
  return true;
}

std::string CommandLine::value() {
  if (index_ + 1 >= argc_) fail(std::string(argument()) + " needs a value");
  return argv_[++index_];
}

int CommandLine::integer(int low, std::string_view expected) {
  const std::string option(argument());
  const std::string text = value();
  int number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc{} || end != text.data() + text.size() || number < low)
    fail(option + ": expected " +
         (expected.empty() ? "an integer of at least " + std::to_string(low) : std::string(expected)) + ", got '" +
         text + "'");
  return number;
}

void CommandLine::fail(const std::string& why) const {
  if (style_ == ErrorStyle::PointToHelp)
    std::fprintf(stderr, "%s: %s (try --help)\n", program_.c_str(), why.c_str());
  else
    std::fprintf(stderr, "%s: %s\n%s", program_.c_str(), why.c_str(), usage_.c_str());
  std::exit(2);
}

} // namespace mqx::ssb
