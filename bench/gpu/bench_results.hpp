// Named measurements of one benchmark run and their JSON form. A child
// process writes "name value" lines; the parent reads them back and writes
// one JSON document.
#pragma once

#include <map>
#include <string>

namespace mqx::bench {

class Results {
public:
  void set(const std::string& name, double value) { numbers_[name] = value; }
  void note(const std::string& name, const std::string& text) { texts_[name] = text; }
  // NaN when absent.
  double get(const std::string& name) const;
  bool has(const std::string& name) const { return numbers_.count(name) != 0; }
  // Empty when absent.
  std::string text(const std::string& name) const {
    auto it = texts_.find(name);
    return it != texts_.end() ? it->second : std::string();
  }

  // "name value" / "name =text" lines.
  bool save(const std::string& path) const;
  bool load(const std::string& path);

  // {"name": value, ...}, texts quoted.
  std::string json(int indent) const;

private:
  std::map<std::string, double> numbers_;
  std::map<std::string, std::string> texts_;
};

// A JSON string literal.
std::string quote(const std::string& text);

} // namespace mqx::bench
