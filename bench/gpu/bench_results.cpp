#include "bench_results.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace mqx::bench {

double Results::get(const std::string& name) const {
  auto it = numbers_.find(name);
  return it != numbers_.end() ? it->second : std::numeric_limits<double>::quiet_NaN();
}

bool Results::save(const std::string& path) const {
  std::ofstream out(path);
  for (const auto& [name, value] : numbers_)
    out << name << ' ' << value << '\n';
  for (const auto& [name, text] : texts_)
    out << name << " =" << text << '\n';
  return static_cast<bool>(out);
}

bool Results::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    auto space = line.find(' ');
    if (space == std::string::npos) continue;
    std::string name = line.substr(0, space);
    std::string rest = line.substr(space + 1);
    if (!rest.empty() && rest[0] == '=') {
      texts_[name] = rest.substr(1);
    } else {
      numbers_[name] = std::stod(rest);
    }
  }
  return true;
}

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string Results::json(int indent) const {
  std::string pad(indent + 2, ' ');
  std::ostringstream out;
  out << "{";
  const char* separator = "\n";
  for (const auto& [name, text] : texts_) {
    out << separator << pad << quote(name) << ": " << quote(text);
    separator = ",\n";
  }
  for (const auto& [name, value] : numbers_) {
    out << separator << pad << quote(name) << ": ";
    if (std::isfinite(value)) {
      out << value;
    } else {
      out << "null";
    }
    separator = ",\n";
  }
  out << "\n" << std::string(indent, ' ') << "}";
  return out.str();
}

} // namespace mqx::bench
