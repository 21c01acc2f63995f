#include "query_name.hpp"

#include <filesystem>
#include <regex>

namespace mqx::daemon {
namespace {

std::string fileName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

bool interpreter(const std::string& program) {
  static const std::regex names(R"((python|pypy|ruby|perl|node|julia|Rscript|bash|sh|zsh)[0-9.]*)");
  return std::regex_match(program, names);
}

} // namespace

std::string defaultQueryName(const std::vector<std::string>& command) {
  if (command.empty()) return {};
  const std::string program = fileName(command[0]);
  if (!interpreter(program)) return program;
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& argument = command[i];
    if (argument == "-m" && i + 1 < command.size()) return program + " -m " + command[i + 1];
    if (argument == "-c" || argument == "-e") return program; // inline code: nothing names it
    if (!argument.empty() && argument[0] != '-') return program + " " + fileName(argument);
  }
  return program;
}

} // namespace mqx::daemon
