#include "config/installed_config.hpp"

#include <dlfcn.h>

#include <system_error>

namespace mqx {

std::optional<std::string> installedConfigFileFor(const std::filesystem::path& object) {
  std::filesystem::path folder = object.parent_path();
  if (folder.parent_path().filename() == "lib") folder = folder.parent_path(); // lib/<multiarch>
  if (folder.filename() != "bin" && folder.filename() != "lib") return std::nullopt;
  const std::filesystem::path prefix = folder.parent_path();
  const std::filesystem::path file =
      prefix == "/usr" ? std::filesystem::path("/etc/mqx/mqx.toml") : prefix / "etc" / "mqx" / "mqx.toml";
  std::error_code error;
  if (!std::filesystem::is_regular_file(file, error)) return std::nullopt;
  return file.string();
}

std::optional<std::string> installedConfigFile() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&installedConfigFileFor), &info) == 0 || info.dli_fname == nullptr)
    return std::nullopt;
  std::error_code error;
  std::filesystem::path object = info.dli_fname;
  // The main program's code is reported under the name it was started by,
  // which may be bare or relative: /proc/self/exe is where it is.
  if (object.is_relative() || object.parent_path().empty())
    object = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return std::nullopt;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(object, error);
  return installedConfigFileFor(error ? object : canonical);
}

} // namespace mqx
