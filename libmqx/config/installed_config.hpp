// The configuration file installed with mqx (cmake --install, the .deb:
// cmake/Install.cmake), which a process reads when MQX_CONFIG names none, so
// that an installed mqxd, mqx-run and libmqx.so share one configuration
// without environment variables (issue 18, docs/configuration.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mqx {

// For the program or library `object` installed at PREFIX/bin, PREFIX/lib or
// PREFIX/lib/<multiarch>: PREFIX/etc/mqx/mqx.toml, or /etc/mqx/mqx.toml for
// the prefix /usr (the GNU convention Install.cmake follows), when that file
// exists. A build tree (build/bin, build/lib) has none: its programs keep
// the built-in defaults.
std::optional<std::string> installedConfigFileFor(const std::filesystem::path& object);

// The same for the object that holds this code in the running process:
// libmqx.so in a query, mqxd or mqx-run themselves.
std::optional<std::string> installedConfigFile();

} // namespace mqx
