#include "config/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

extern char** environ;

namespace mqx {
namespace {

// A key's value as it arrives: from TOML (typed) or from the environment
// (text).
struct RawValue {
  const toml::node* node = nullptr; // set when from TOML
  std::string text;                 // set when from the environment
  bool fromEnvironment() const { return node == nullptr; }
};

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw ConfigError("mqx config: " + key + ": " + why);
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool readBool(const RawValue& value, const std::string& key) {
  if (!value.fromEnvironment()) {
    if (const auto* b = value.node->as_boolean()) return b->get();
    fail(key, "expected true or false");
  }
  std::string text = lower(value.text);
  if (text == "1" || text == "true" || text == "on" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "off" || text == "no") return false;
  fail(key, "expected true or false, got '" + value.text + "'");
}

double readDouble(const RawValue& value, const std::string& key, double min, double max) {
  double result = 0;
  if (!value.fromEnvironment()) {
    auto d = value.node->value<double>();
    if (!d) fail(key, "expected a number");
    result = *d;
  } else {
    try {
      std::size_t used = 0;
      result = std::stod(value.text, &used);
      if (used != value.text.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      fail(key, "expected a number, got '" + value.text + "'");
    }
  }
  if (!std::isfinite(result) || result < min || result > max)
    fail(key, fmt::format("value {} out of range [{}, {}]", result, min, max));
  return result;
}

std::uint64_t readInteger(const RawValue& value, const std::string& key) {
  if (!value.fromEnvironment()) {
    auto i = value.node->value<std::int64_t>();
    if (!i || !value.node->is_integer() || *i < 0) fail(key, "expected a non-negative integer");
    return static_cast<std::uint64_t>(*i);
  }
  try {
    std::size_t used = 0;
    auto result = std::stoull(value.text, &used);
    if (used != value.text.size() || value.text.starts_with('-')) throw std::invalid_argument("x");
    return result;
  } catch (const std::exception&) {
    fail(key, "expected a non-negative integer, got '" + value.text + "'");
  }
}

std::size_t readSize(const RawValue& value, const std::string& key, std::size_t min, std::size_t max) {
  std::size_t bytes = 0;
  if (!value.fromEnvironment()) {
    if (value.node->is_integer()) {
      auto i = *value.node->value<std::int64_t>();
      if (i < 0) fail(key, "size must not be negative");
      bytes = static_cast<std::size_t>(i);
    } else if (auto s = value.node->value<std::string>()) {
      bytes = parseSize(*s, key);
    } else {
      fail(key, "expected a size (bytes, or a string such as \"8MiB\")");
    }
  } else {
    bytes = parseSize(value.text, key);
  }
  if (bytes < min || bytes > max) fail(key, fmt::format("size {} out of range [{}, {}]", bytes, min, max));
  return bytes;
}

template <typename Enum>
Enum readChoice(const RawValue& value, const std::string& key,
                const std::vector<std::pair<std::string, Enum>>& choices) {
  std::string text;
  if (!value.fromEnvironment()) {
    auto s = value.node->value<std::string>();
    if (!s) fail(key, "expected a string");
    text = *s;
  } else {
    text = value.text;
  }
  std::string names;
  for (const auto& [name, choice] : choices) {
    if (lower(text) == name) return choice;
    names += (names.empty() ? "" : ", ") + name;
  }
  fail(key, "unknown value '" + text + "' (expected one of: " + names + ")");
}

std::string readString(const RawValue& value, const std::string& key) {
  if (value.fromEnvironment()) return value.text;
  auto s = value.node->value<std::string>();
  if (!s) fail(key, "expected a string");
  return *s;
}

// A TOML array of strings, or a comma-separated list from the environment.
std::vector<std::string> readStringList(const RawValue& value, const std::string& key) {
  std::vector<std::string> result;
  if (value.fromEnvironment()) {
    std::stringstream text(value.text);
    for (std::string item; std::getline(text, item, ',');)
      if (!item.empty()) result.push_back(item);
    return result;
  }
  const auto* array = value.node->as_array();
  if (array == nullptr) fail(key, "expected an array of strings");
  for (const auto& element : *array) {
    auto item = element.value<std::string>();
    if (!item || item->empty()) fail(key, "expected an array of non-empty strings");
    result.push_back(*item);
  }
  return result;
}

unsigned readMilliseconds(const RawValue& value, const std::string& key, unsigned min, unsigned max) {
  const std::uint64_t result = readInteger(value, key);
  if (result < min || result > max) fail(key, fmt::format("value {} out of range [{}, {}]", result, min, max));
  return static_cast<unsigned>(result);
}

using Setter = std::function<void(Config&, const RawValue&, const std::string&)>;

// Every key, in one table: the TOML parser and the environment both use it.
const std::map<std::string, Setter>& keyTable() {
  static const std::map<std::string, Setter> table = {
      {"memory.page_size",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.pageSize = readSize(v, k, 64 * 1024, std::size_t{1} << 32);
         if ((c.pageSize & (c.pageSize - 1)) != 0) fail(k, "page size must be a power of two");
       }},
      {"memory.device_memory_limit",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.deviceMemoryLimit = readSize(v, k, 0, std::size_t{1} << 50);
       }},
      {"memory.swap_buffer_limit",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.swapBufferLimit = readSize(v, k, 0, std::size_t{1} << 50);
       }},
      {"memory.pinned_swap", [](Config& c, const RawValue& v, const std::string& k) { c.pinnedSwap = readBool(v, k); }},
      {"policy.replacement",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.replacement = readChoice<ReplacementKind>(v, k,
                                                     {{"cdr", ReplacementKind::Cdr},
                                                      {"lru", ReplacementKind::Lru},
                                                      {"mru", ReplacementKind::Mru},
                                                      {"lfu", ReplacementKind::Lfu},
                                                      {"random", ReplacementKind::Random}});
       }},
      {"policy.latency_factor",
       [](Config& c, const RawValue& v, const std::string& k) { c.latencyFactor = readDouble(v, k, 0.0, 1.0); }},
      {"policy.eviction_granularity",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.evictionGranularity = readChoice<EvictionGranularity>(
             v, k, {{"region", EvictionGranularity::Region}, {"page", EvictionGranularity::Page}});
       }},
      {"policy.random_seed",
       [](Config& c, const RawValue& v, const std::string& k) { c.randomSeed = readInteger(v, k); }},
      {"optimizations.lazy_transfer",
       [](Config& c, const RawValue& v, const std::string& k) { c.lazyTransfer = readBool(v, k); }},
      {"optimizations.copy_on_write",
       [](Config& c, const RawValue& v, const std::string& k) { c.copyOnWrite = readBool(v, k); }},
      {"optimizations.cow_min_bytes",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.cowMinBytes = readSize(v, k, 0, std::size_t{1} << 40);
       }},
      {"optimizations.reference_detection",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.referenceDetection = readChoice<ReferenceDetection>(v, k,
                                                               {{"auto", ReferenceDetection::Auto},
                                                                {"advice", ReferenceDetection::Advice},
                                                                {"scan", ReferenceDetection::Scan},
                                                                {"all", ReferenceDetection::All}});
       }},
      {"optimizations.access_advice",
       [](Config& c, const RawValue& v, const std::string& k) { c.accessAdvice = readBool(v, k); }},
      {"optimizations.page_coherence",
       [](Config& c, const RawValue& v, const std::string& k) { c.pageCoherence = readBool(v, k); }},
      {"backend.kind",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.backend = readChoice<BackendKind>(
             v, k, {{"auto", BackendKind::Auto}, {"cuda", BackendKind::Cuda}, {"sim", BackendKind::Sim}});
       }},
      {"backend.fence_coalesce_us",
       [](Config& c, const RawValue& v, const std::string& k) {
         const std::uint64_t value = readInteger(v, k);
         if (value > 10'000) fail(k, fmt::format("value {} out of range [0, 10000]", value));
         c.fenceCoalesceMicroseconds = static_cast<unsigned>(value);
       }},
      {"sim.capacity",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.simCapacity = readSize(v, k, 2 * 1024 * 1024, std::size_t{1} << 40);
       }},
      {"sim.granularity",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.simGranularity = readSize(v, k, 4096, std::size_t{1} << 30);
         if ((c.simGranularity & (c.simGranularity - 1)) != 0) fail(k, "granularity must be a power of two");
       }},
      {"sim.copy_bandwidth_gbps", [](Config& c, const RawValue& v,
                                     const std::string& k) { c.simCopyBandwidthGBps = readDouble(v, k, 0.001, 1e5); }},
      {"sim.device_bandwidth_gbps",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.simDeviceBandwidthGBps = readDouble(v, k, 0.001, 1e6);
       }},
      {"sim.realtime", [](Config& c, const RawValue& v, const std::string& k) { c.simRealtime = readBool(v, k); }},
      {"daemon.instance",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.daemonInstance = readString(v, k);
         const bool safe = std::all_of(c.daemonInstance.begin(), c.daemonInstance.end(), [](unsigned char ch) {
           return std::isalnum(ch) || ch == '-' || ch == '_';
         });
         if (!safe || c.daemonInstance.size() > 64) fail(k, "letters, digits, '-' and '_' only, at most 64");
       }},
      {"daemon.capacity",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.daemonCapacity = readSize(v, k, 0, std::size_t{1} << 50);
       }},
      {"daemon.admission",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.admission = readChoice<AdmissionKind>(
             v, k, {{"weight", AdmissionKind::Weight}, {"peak", AdmissionKind::Peak}, {"fix", AdmissionKind::Fix}});
       }},
      {"daemon.fix_n",
       [](Config& c, const RawValue& v, const std::string& k) { c.admissionFixN = readMilliseconds(v, k, 1, 64); }},
      {"daemon.liveness_interval_ms",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.livenessIntervalMilliseconds = readMilliseconds(v, k, 10, 1000);
       }},
      {"daemon.eviction_timeout_ms",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.evictionTimeoutMilliseconds = readMilliseconds(v, k, 10, 600'000);
       }},
      {"daemon.demand_report_interval_ms",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.demandReportIntervalMilliseconds = readMilliseconds(v, k, 10, 600'000);
       }},
      {"daemon.demand_state_file",
       [](Config& c, const RawValue& v, const std::string& k) { c.demandStateFile = readString(v, k); }},
      {"daemon.allow_no_daemon",
       [](Config& c, const RawValue& v, const std::string& k) { c.allowNoDaemon = readBool(v, k); }},
      {"daemon.mps",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.mps = readChoice<MpsMode>(v, k,
                                     {{"off", MpsMode::Off}, {"detect", MpsMode::Detect}, {"manage", MpsMode::Manage}});
       }},
      {"daemon.mps_control",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.mpsControl = readString(v, k);
         if (c.mpsControl.empty()) fail(k, "must name the control program");
       }},
      {"daemon.mps_pipe_directory",
       [](Config& c, const RawValue& v, const std::string& k) { c.mpsPipeDirectory = readString(v, k); }},
      {"daemon.mps_log_directory",
       [](Config& c, const RawValue& v, const std::string& k) { c.mpsLogDirectory = readString(v, k); }},
      {"kernelopt.resizable_kernels",
       [](Config& c, const RawValue& v, const std::string& k) { c.resizableKernels = readStringList(v, k); }},
      {"kernelopt.reply_timeout_ms",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.launchReplyTimeoutMilliseconds = readMilliseconds(v, k, 1, 10'000);
       }},
      {"kernelopt.lease_ms",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.launchLeaseMilliseconds = readMilliseconds(v, k, 10, 3'600'000);
       }},
      {"daemon.metrics_file",
       [](Config& c, const RawValue& v, const std::string& k) { c.metricsFile = readString(v, k); }},
      {"daemon.metrics_port",
       [](Config& c, const RawValue& v, const std::string& k) { c.metricsPort = readMilliseconds(v, k, 0, 65535); }},
      {"daemon.metrics_interval_ms",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.metricsIntervalMilliseconds = readMilliseconds(v, k, 10, 3'600'000);
       }},
      {"trace.file", [](Config& c, const RawValue& v, const std::string& k) { c.traceFile = readString(v, k); }},
      {"trace.buffer_events",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.traceBufferEvents = readMilliseconds(v, k, 1, 16'777'216);
       }},
      {"log.level",
       [](Config& c, const RawValue& v, const std::string& k) {
         c.logLevel = readChoice<LogLevel>(v, k,
                                           {{"error", LogLevel::Error},
                                            {"warn", LogLevel::Warn},
                                            {"info", LogLevel::Info},
                                            {"debug", LogLevel::Debug},
                                            {"trace", LogLevel::Trace}});
       }},
  };
  return table;
}

void validate(const Config& config) {
  // Both are powers of two, so "not larger" means "divides".
  if (config.simGranularity > config.pageSize) fail("sim.granularity", "must not exceed memory.page_size");
}

void applyTable(Config& config, const toml::table& table, const std::string& prefix) {
  for (const auto& [name, node] : table) {
    std::string key = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const auto* sub = node.as_table()) {
      if (!prefix.empty()) fail(key, "unknown section");
      applyTable(config, *sub, key);
      continue;
    }
    auto it = keyTable().find(key);
    if (it == keyTable().end()) fail(key, "unknown key");
    it->second(config, RawValue{&node, {}}, key);
  }
}

} // namespace

std::size_t parseSize(const std::string& text, const std::string& key) {
  static const std::vector<std::pair<std::string, std::size_t>> units = {
      {"kib", std::size_t{1} << 10},
      {"mib", std::size_t{1} << 20},
      {"gib", std::size_t{1} << 30},
      {"tib", std::size_t{1} << 40},
      {"kb", 1000},
      {"mb", 1000 * 1000},
      {"gb", 1000 * 1000 * 1000},
      {"b", 1},
  };
  std::string t = lower(text);
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  std::size_t multiplier = 1;
  for (const auto& [suffix, factor] : units) {
    if (t.size() > suffix.size() && t.ends_with(suffix)) {
      multiplier = factor;
      t.resize(t.size() - suffix.size());
      break;
    }
  }
  // Digits with at most one decimal point: what std::stod would otherwise
  // reject with an exception of its own ("." alone) or read only in part
  // ("1.2.3").
  const bool number = std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; }) &&
                      std::count(t.begin(), t.end(), '.') <= 1 && std::any_of(t.begin(), t.end(), ::isdigit);
  if (!number)
    fail(key, "expected a size such as 4096, \"512KiB\", \"8MiB\" or \"2GiB\", "
              "got '" +
                  text + "'");
  double value = std::stod(t);
  double bytes = value * static_cast<double>(multiplier);
  if (bytes > static_cast<double>(std::numeric_limits<std::size_t>::max() / 2)) fail(key, "size too large");
  return static_cast<std::size_t>(bytes);
}

void requireAsciiToml(const std::string& tomlText, const std::string& where) {
  std::size_t line = 1, column = 1;
  for (unsigned char c : tomlText) {
    if (c >= 0x80)
      throw ConfigError(fmt::format("{}:{}:{}: non-ASCII character (mqx configuration and plan files are ASCII)",
                                    where, line, column));
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

Config parseConfig(const std::string& tomlText, const std::string& origin) {
  Config config;
  requireAsciiToml(tomlText, "mqx config: " + origin);
  toml::table table;
  try {
    table = toml::parse(tomlText, origin);
  } catch (const toml::parse_error& error) {
    const auto& where = error.source().begin;
    // One line: toml++ descriptions may quote a newline of the input.
    std::string description(error.description());
    std::replace(description.begin(), description.end(), '\n', ' ');
    throw ConfigError(fmt::format("mqx config: {}:{}:{}: {}", origin, where.line, where.column, description));
  }
  applyTable(config, table, "");
  validate(config);
  return config;
}

void applyEnvironment(Config& config, const std::map<std::string, std::string>& environment) {
  // MQX_SIM_COPY_BANDWIDTH_GBPS -> sim.copy_bandwidth_gbps. A variable whose
  // prefix names a section but no key of it is an error, not a silent no-op.
  std::map<std::string, std::string> sections;
  for (const auto& [key, setter] : keyTable()) {
    std::string section = key.substr(0, key.find('.'));
    std::string upper = section;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    sections["MQX_" + upper + "_"] = section;
  }
  for (const auto& [name, value] : environment) {
    for (const auto& [prefix, section] : sections) {
      if (!name.starts_with(prefix)) continue;
      std::string key = section + "." + lower(name.substr(prefix.size()));
      auto it = keyTable().find(key);
      if (it == keyTable().end()) fail(name, "unknown configuration variable (no key " + key + ")");
      it->second(config, RawValue{nullptr, value}, name);
    }
  }
  validate(config);
}

std::map<std::string, std::string> processEnvironment() {
  std::map<std::string, std::string> result;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto eq = text.find('=');
    if (eq != std::string::npos) result[text.substr(0, eq)] = text.substr(eq + 1);
  }
  return result;
}

Config loadConfig() {
  auto environment = processEnvironment();
  Config config;
  if (auto it = environment.find("MQX_CONFIG"); it != environment.end() && !it->second.empty()) {
    std::ifstream file(it->second);
    if (!file) throw ConfigError("mqx config: MQX_CONFIG: cannot read '" + it->second + "'");
    std::stringstream text;
    text << file.rdbuf();
    config = parseConfig(text.str(), it->second);
  }
  applyEnvironment(config, environment);
  return config;
}

std::string toString(ReplacementKind kind) {
  switch (kind) {
  case ReplacementKind::Cdr: return "cdr";
  case ReplacementKind::Lru: return "lru";
  case ReplacementKind::Mru: return "mru";
  case ReplacementKind::Lfu: return "lfu";
  case ReplacementKind::Random: return "random";
  }
  return "?";
}

std::string toString(AdmissionKind kind) {
  switch (kind) {
  case AdmissionKind::Weight: return "weight";
  case AdmissionKind::Peak: return "peak";
  case AdmissionKind::Fix: return "fix";
  }
  return "?";
}

std::string toString(MpsMode mode) {
  switch (mode) {
  case MpsMode::Off: return "off";
  case MpsMode::Detect: return "detect";
  case MpsMode::Manage: return "manage";
  }
  return "?";
}

} // namespace mqx
