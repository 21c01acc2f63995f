// The command line of an SSB program (ssb-qX.Y, ssb-loader, ssb-datagen,
// ssb-reference): walks argv, answers --help, hands out an option's value
// and parses integers with bounds. A bad command line ends the program with
// one line naming the option and exit status 2, so that every program refuses
// bad input alike and tests can look for the option's name.
#pragma once

#include <string>
#include <string_view>

namespace mqx::ssb {

class CommandLine {
public:
  // How a bad command line is told on stderr: "PROGRAM: WHY (try --help)"
  // (the query programs, ssb-loader), or "PROGRAM: WHY" followed by the
  // usage text (ssb-datagen, ssb-reference).
  enum class ErrorStyle { PointToHelp, PrintUsage };

  CommandLine(int argc, char** argv, std::string program, std::string usage,
              ErrorStyle style = ErrorStyle::PointToHelp);

  // Moves to the next argument; false when none is left. --help or -h
  // prints the usage on stdout and exits 0.
  bool next();

  // The argument next() moved to (an option's name, or a flag).
  std::string_view argument() const { return argv_[index_]; }

  // The value that follows the current option, which it consumes; fails
  // with "OPTION needs a value" when the option is the last argument.
  std::string value();

  // value() as a decimal integer of at least `low`; else fails with
  // "OPTION: expected EXPECTED, got 'TEXT'", EXPECTED being "an integer of
  // at least LOW" unless given.
  int integer(int low, std::string_view expected = {});

  // One line saying why the command line is refused; exit status 2.
  [[noreturn]] void fail(const std::string& why) const;

private:
  int argc_;
  char** argv_;
  int index_ = 0; // argv_[0] is the program
  std::string program_;
  std::string usage_;
  ErrorStyle style_;
};

} // namespace mqx::ssb
