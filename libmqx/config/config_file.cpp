// Reading the configuration a process starts with: the file (MQX_CONFIG,
// Python's path, or the installed one), then the environment's overrides.
#include <fmt/format.h>

#include "common/files.hpp"
#include "config/config.hpp"
#include "config/installed_config.hpp"

namespace mqx {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw ConfigError("mqx config: " + key + ": " + why);
}

} // namespace

std::string readConfigFile(const std::string& path, const std::string& key) {
  std::string error;
  auto text = readRegularFile(path, kMaxConfigFileBytes, "a configuration file", &error);
  if (!text) fail(key, error);
  return std::move(*text);
}

Config loadConfig(const std::map<std::string, std::string>& environment, const std::optional<std::string>& path,
                  const std::optional<std::string>& installedFile) {
  Config config;
  if (path) {
    config = parseConfig(readConfigFile(*path, "path"), *path);
  } else if (auto it = environment.find("MQX_CONFIG"); it != environment.end() && !it->second.empty()) {
    config = parseConfig(readConfigFile(it->second, "MQX_CONFIG"), it->second);
  } else if (installedFile) {
    // Nobody named this file: say which one it was.
    try {
      config = parseConfig(readConfigFile(*installedFile, "the installed configuration"), *installedFile);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{} (in {}, the installed configuration; MQX_CONFIG names another)", error.what(),
                                    *installedFile));
    }
  }
  applyEnvironment(config, environment);
  warnAboutUnknownVariables(environment, config.logLevel);
  return config;
}

Config loadConfig() { return loadConfig(processEnvironment(), std::nullopt, installedConfigFile()); }

} // namespace mqx
