#include "json_output.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace mqx::bench {

std::string jsonText(const Json& document) {
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + '\n';
}

bool writeJsonFile(const std::string& path, const Json& document) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << jsonText(document);
  if (out.flush()) return true;
  std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  return false;
}

double rounded(double value, int decimals) {
  if (!std::isfinite(value)) return value;
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

} // namespace mqx::bench
