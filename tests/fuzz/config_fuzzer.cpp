// Fuzz target: the configuration parser (libmqx/config). The first byte
// chooses the route: a TOML file (parseConfig) or environment overrides
// (applyEnvironment over "NAME=value" lines). Every bad input must end in a
// ConfigError with a one-line message naming the key; any other exception,
// a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "config/config.hpp"

namespace {

std::map<std::string, std::string> environmentOf(const std::string& text) {
  std::map<std::string, std::string> environment;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (const auto eq = line.find('='); eq != std::string::npos)
      environment["MQX_" + line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return environment;
}

void checkMessage(const mqx::ConfigError& error) {
  const std::string message = error.what();
  if (message.rfind("mqx config: ", 0) != 0 || message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "config error message is not one line naming the key: '%s'\n", message.c_str());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  mqx::setLogLevel(mqx::LogLevel::Error);
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      const mqx::Config config = mqx::parseConfig(text, "fuzz.toml");
      // What parsing accepted is within the documented ranges.
      if (config.pageSize == 0 || (config.pageSize & (config.pageSize - 1)) != 0 ||
          config.simGranularity > config.pageSize || config.latencyFactor < 0 || config.latencyFactor > 1)
        std::abort();
    } else {
      mqx::Config config;
      mqx::applyEnvironment(config, environmentOf(text));
      if (config.pageSize == 0 || (config.pageSize & (config.pageSize - 1)) != 0 ||
          config.simGranularity > config.pageSize)
        std::abort();
    }
  } catch (const mqx::ConfigError& error) {
    checkMessage(error);
  }
  return 0;
}
