#include "config/config.hpp"
#include "config/config_keys.hpp"
#include "config/config_names.hpp"

#include <toml++/toml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <type_traits>
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

// A value as the user wrote it, for error messages: the variable's text
// exactly (never a number converted back, which may differ: 2^63-1 read as a
// double prints as ...808), a TOML string as written, other TOML values as
// toml++ prints them (integers exactly).
std::string givenText(const RawValue& value) {
  if (value.fromEnvironment()) return value.text;
  if (const auto* text = value.node->as_string()) return text->get();
  std::ostringstream printed;
  value.node->visit([&](const auto& node) { printed << node; });
  return printed.str();
}

// Messages are one line whatever the input held: a quoted value may contain
// newlines (a TOML "\n" escape; found by tests/fuzz/plan_fuzzer).
std::string oneLine(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw ConfigError(oneLine("mqx config: " + key + ": " + why));
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
    fail(key, fmt::format("value '{}' out of range [{}, {}]", givenText(value), min, max));
  return result;
}

std::uint64_t readInteger(const RawValue& value, const std::string& key) {
  if (!value.fromEnvironment()) {
    // as_integer, not value<int64_t>: toml++ converts a float such as 1e30
    // to an integer without a range check (undefined behaviour).
    const auto* i = value.node->as_integer();
    if (i == nullptr || i->get() < 0) fail(key, "expected a non-negative integer");
    return static_cast<std::uint64_t>(i->get());
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
  if (bytes < min || bytes > max) {
    const std::string given = givenText(value);
    const std::string inBytes = given == std::to_string(bytes) ? "" : fmt::format(" ({} bytes)", bytes);
    fail(key, fmt::format("size '{}'{} out of range [{}, {}]", given, inBytes, min, max));
  }
  return bytes;
}

// A choice key's values by name, in the order an error message lists them.
template <typename Enum> using Choices = std::vector<std::pair<std::string, Enum>>;

template <typename Enum> Enum readChoice(const RawValue& value, const std::string& key, const Choices<Enum>& choices) {
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

std::uint64_t readBoundedInteger(const RawValue& value, const std::string& key, std::uint64_t min, std::uint64_t max) {
  const std::uint64_t result = readInteger(value, key);
  if (result < min || result > max)
    fail(key, fmt::format("value '{}' out of range [{}, {}]", givenText(value), min, max));
  return result;
}

// The names of every choice key's values: the parser reads them, toString and
// configValues write them.
const Choices<ReplacementKind>& choicesOf(ReplacementKind) {
  static const Choices<ReplacementKind> choices = {
      {"cdr", ReplacementKind::Cdr},    {"lru", ReplacementKind::Lru},       {"mru", ReplacementKind::Mru},
      {"lfu", ReplacementKind::Lfu},    {"random", ReplacementKind::Random}, {"adaptive", ReplacementKind::Adaptive},
      {"reuse", ReplacementKind::Reuse}};
  return choices;
}

const Choices<EvictionGranularity>& choicesOf(EvictionGranularity) {
  static const Choices<EvictionGranularity> choices = {{"region", EvictionGranularity::Region},
                                                       {"page", EvictionGranularity::Page}};
  return choices;
}

const Choices<ReferenceDetection>& choicesOf(ReferenceDetection) {
  static const Choices<ReferenceDetection> choices = {{"auto", ReferenceDetection::Auto},
                                                      {"advice", ReferenceDetection::Advice},
                                                      {"scan", ReferenceDetection::Scan},
                                                      {"all", ReferenceDetection::All}};
  return choices;
}

const Choices<BackendKind>& choicesOf(BackendKind) {
  static const Choices<BackendKind> choices = {
      {"auto", BackendKind::Auto}, {"cuda", BackendKind::Cuda}, {"sim", BackendKind::Sim}};
  return choices;
}

const Choices<AdmissionKind>& choicesOf(AdmissionKind) {
  static const Choices<AdmissionKind> choices = {{"weight", AdmissionKind::Weight},
                                                 {"peak", AdmissionKind::Peak},
                                                 {"fix", AdmissionKind::Fix},
                                                 {"adaptive", AdmissionKind::Adaptive}};
  return choices;
}

const Choices<MpsMode>& choicesOf(MpsMode) {
  static const Choices<MpsMode> choices = {
      {"off", MpsMode::Off}, {"detect", MpsMode::Detect}, {"manage", MpsMode::Manage}};
  return choices;
}

const Choices<PlacementKind>& choicesOf(PlacementKind) {
  static const Choices<PlacementKind> choices = {{"demand", PlacementKind::Demand},
                                                 {"round-robin", PlacementKind::RoundRobin}};
  return choices;
}

const Choices<LogLevel>& choicesOf(LogLevel) {
  static const Choices<LogLevel> choices = {{"error", LogLevel::Error},
                                            {"warn", LogLevel::Warn},
                                            {"info", LogLevel::Info},
                                            {"debug", LogLevel::Debug},
                                            {"trace", LogLevel::Trace}};
  return choices;
}

template <typename Enum> std::string choiceName(Enum value) {
  for (const auto& [name, choice] : choicesOf(value))
    if (choice == value) return name;
  return "?";
}

// A field's value as configValues gives it.
ConfigValue shown(bool value) { return value; }
ConfigValue shown(double value) { return value; }
ConfigValue shown(const std::string& value) { return value; }
ConfigValue shown(const std::vector<std::string>& value) { return value; }
template <std::unsigned_integral Integer>
requires(!std::same_as<Integer, bool>) ConfigValue shown(Integer value) { return std::uint64_t{value}; }
template <typename Enum>
requires std::is_enum_v<Enum> ConfigValue shown(Enum value) { return choiceName(value); }
ConfigValue shown(const std::optional<std::size_t>& value) {
  return value ? ConfigValue{std::uint64_t{*value}} : ConfigValue{std::string("auto")};
}

// What the table knows of one key: how to set it from a raw value, and how to
// show it.
struct KeyHandler {
  std::function<void(Config&, const RawValue&, const std::string&)> set;
  std::function<ConfigValue(const Config&)> show;
};

struct NoCheck {
  template <typename Field> void operator()(const Field&, const std::string&) const {}
};

// A key bound to one field of Config: `read` parses and range-checks the raw
// value, `check` adds a rule of the key's own (power of two, allowed
// characters).
template <typename Field, typename Read, typename Check = NoCheck>
KeyHandler fieldKey(Field Config::*field, Read read, Check check = {}) {
  return {[=](Config& c, const RawValue& v, const std::string& k) {
            c.*field = static_cast<Field>(read(v, k));
            check(c.*field, k);
          },
          [=](const Config& c) { return shown(c.*field); }};
}

template <typename Field, typename Check = NoCheck>
KeyHandler sizeKey(Field Config::*field, std::size_t min, std::size_t max, Check check = {}) {
  return fieldKey(
      field, [=](const RawValue& v, const std::string& k) { return readSize(v, k, min, max); }, check);
}

// A size, or "auto" (empty: the reader of the key decides from the host).
KeyHandler sizeOrAutoKey(std::optional<std::size_t> Config::*field, std::size_t min, std::size_t max) {
  return fieldKey(field, [=](const RawValue& v, const std::string& k) -> std::optional<std::size_t> {
    const bool isAuto = v.fromEnvironment() ? v.text == "auto" : v.node->value<std::string>() == "auto";
    if (isAuto) return std::nullopt;
    return readSize(v, k, min, max);
  });
}

template <typename Field> KeyHandler integerKey(Field Config::*field, std::uint64_t min, std::uint64_t max) {
  return fieldKey(field, [=](const RawValue& v, const std::string& k) { return readBoundedInteger(v, k, min, max); });
}

KeyHandler doubleKey(double Config::*field, double min, double max) {
  return fieldKey(field, [=](const RawValue& v, const std::string& k) { return readDouble(v, k, min, max); });
}

KeyHandler boolKey(bool Config::*field) { return fieldKey(field, readBool); }

template <typename Check = NoCheck> KeyHandler stringKey(std::string Config::*field, Check check = {}) {
  return fieldKey(field, readString, check);
}

template <typename Enum> KeyHandler choiceKey(Enum Config::*field) {
  return fieldKey(field, [](const RawValue& v, const std::string& k) { return readChoice(v, k, choicesOf(Enum{})); });
}

struct PowerOfTwo {
  const char* what;
  void operator()(std::size_t value, const std::string& key) const {
    if ((value & (value - 1)) != 0) fail(key, std::string(what) + " must be a power of two");
  }
};

void requireInstanceName(const std::string& instance, const std::string& key) {
  const bool safe = std::all_of(instance.begin(), instance.end(),
                                [](unsigned char ch) { return std::isalnum(ch) || ch == '-' || ch == '_'; });
  if (!safe || instance.size() > 64) fail(key, "letters, digits, '-' and '_' only, at most 64");
}

// sim.device: "" (the node's first device), a simulated device's name
// sim-<n> or its index <n>, n below sim.devices' limit of 8. Whether the node
// has that device is NodeMembership's check when the process joins.
void requireSimDeviceName(const std::string& device, const std::string& key) {
  if (device.empty()) return;
  const std::string digits = device.starts_with("sim-") ? device.substr(4) : device;
  if (digits.size() != 1 || digits[0] < '0' || digits[0] > '7')
    fail(key, "expected sim-<n> or <n> with n from 0 to 7, or \"\", got '" + device + "'");
}

// Every key, in one table: the TOML parser, the environment and configValues
// all use it.
const std::map<std::string, KeyHandler>& keyTable() {
  static const std::map<std::string, KeyHandler> table = {
      {"memory.page_size", sizeKey(&Config::pageSize, 64 * 1024, std::size_t{1} << 32, PowerOfTwo{"page size"})},
      {"memory.device_memory_limit", sizeKey(&Config::deviceMemoryLimit, 0, std::size_t{1} << 50)},
      {"memory.swap_buffer_limit", sizeKey(&Config::swapBufferLimit, 0, std::size_t{1} << 50)},
      {"memory.pinned_swap", boolKey(&Config::pinnedSwap)},
      {"memory.borrow_host_blocks", boolKey(&Config::borrowHostBlocks)},
      {"memory.reported_oversubscription", doubleKey(&Config::reportedOversubscription, 1.0, 64.0)},
      {"memory.manage_program_vmm", boolKey(&Config::manageProgramVmm)},
      {"policy.replacement", choiceKey(&Config::replacement)},
      {"policy.latency_factor", doubleKey(&Config::latencyFactor, 0.0, 1.0)},
      {"policy.eviction_granularity", choiceKey(&Config::evictionGranularity)},
      {"policy.random_seed", integerKey(&Config::randomSeed, 0, std::numeric_limits<std::uint64_t>::max())},
      {"policy.write_back_ahead", doubleKey(&Config::writeBackAhead, 0.0, 0.5)},
      {"policy.write_back_ahead_quiet_operations", integerKey(&Config::writeBackAheadQuietOperations, 0, 1'000'000)},
      {"policy.spare_pages", integerKey(&Config::sparePages, 0, 16)},
      {"policy.staged_write_back", boolKey(&Config::stagedWriteBack)},
      {"optimizations.lazy_transfer", boolKey(&Config::lazyTransfer)},
      {"optimizations.copy_on_write", boolKey(&Config::copyOnWrite)},
      {"optimizations.cow_min_bytes", sizeKey(&Config::cowMinBytes, 0, std::size_t{1} << 40)},
      {"optimizations.reference_detection", choiceKey(&Config::referenceDetection)},
      {"optimizations.access_advice", boolKey(&Config::accessAdvice)},
      {"optimizations.pointers_in_parameters", boolKey(&Config::pointersInParameters)},
      {"optimizations.page_coherence", boolKey(&Config::pageCoherence)},
      {"backend.kind", choiceKey(&Config::backend)},
      {"backend.fence_coalesce_us", integerKey(&Config::fenceCoalesceMicroseconds, 0, 10'000)},
      {"sim.capacity", sizeKey(&Config::simCapacity, 2 * 1024 * 1024, std::size_t{1} << 40)},
      {"sim.granularity", sizeKey(&Config::simGranularity, 4096, std::size_t{1} << 30, PowerOfTwo{"granularity"})},
      {"sim.copy_bandwidth_gbps", doubleKey(&Config::simCopyBandwidthGBps, 0.001, 1e5)},
      {"sim.device_bandwidth_gbps", doubleKey(&Config::simDeviceBandwidthGBps, 0.001, 1e6)},
      {"sim.realtime", boolKey(&Config::simRealtime)},
      {"sim.devices", integerKey(&Config::simDevices, 1, 8)},
      {"sim.device", stringKey(&Config::simDevice, requireSimDeviceName)},
      {"sim.link_name", stringKey(&Config::simLinkName, requireInstanceName)},
      {"sim.map_cost_us", doubleKey(&Config::simMapCostMicroseconds, 0.0, 1e6)},
      {"daemon.instance", stringKey(&Config::daemonInstance, requireInstanceName)},
      {"daemon.capacity", sizeKey(&Config::daemonCapacity, 0, std::size_t{1} << 50)},
      {"daemon.host_block_pool", sizeOrAutoKey(&Config::hostBlockPool, 0, std::size_t{1} << 44)},
      {"daemon.admission", choiceKey(&Config::admission)},
      {"daemon.placement", choiceKey(&Config::placement)},
      {"daemon.fix_n", integerKey(&Config::admissionFixN, 1, 64)},
      {"daemon.adaptive_window_ms", integerKey(&Config::adaptiveWindowMilliseconds, 100, 600'000)},
      {"daemon.adaptive_initial_limit", integerKey(&Config::adaptiveInitialLimit, 1, 64)},
      {"daemon.adaptive_max_limit", integerKey(&Config::adaptiveMaxLimit, 1, 64)},
      {"daemon.adaptive_eviction_share", doubleKey(&Config::adaptiveEvictionShare, 0.0, 1.0)},
      {"daemon.adaptive_eviction_windows", integerKey(&Config::adaptiveEvictionWindows, 1, 64)},
      {"daemon.adaptive_gain", doubleKey(&Config::adaptiveGain, 0.0, 1.0)},
      {"daemon.adaptive_growth_eviction_share", doubleKey(&Config::adaptiveGrowthEvictionShare, 0.0, 1.0)},
      {"daemon.adaptive_guessed_work_share", doubleKey(&Config::adaptiveGuessedWorkShare, 0.0, 1.0)},
      {"daemon.adaptive_paging_settle_ms", integerKey(&Config::adaptivePagingSettleMilliseconds, 0, 60'000)},
      {"daemon.adaptive_level_evidence_ms", integerKey(&Config::adaptiveLevelEvidenceMilliseconds, 0, 600'000)},
      {"daemon.adaptive_peak_overcommit", doubleKey(&Config::adaptivePeakOvercommit, 0.0, 16.0)},
      {"daemon.undeclared_settle_ms", integerKey(&Config::undeclaredSettleMilliseconds, 0, 600'000)},
      {"daemon.liveness_interval_ms", integerKey(&Config::livenessIntervalMilliseconds, 10, 1000)},
      {"daemon.eviction_timeout_ms", integerKey(&Config::evictionTimeoutMilliseconds, 10, 600'000)},
      {"daemon.demand_report_interval_ms", integerKey(&Config::demandReportIntervalMilliseconds, 10, 600'000)},
      {"daemon.demand_state_file", stringKey(&Config::demandStateFile)},
      {"daemon.allow_no_daemon", boolKey(&Config::allowNoDaemon)},
      {"daemon.admission_timeout_s", integerKey(&Config::admissionTimeoutSeconds, 0, 31'536'000)},
      {"daemon.start_before_admission", boolKey(&Config::startBeforeAdmission)},
      {"daemon.mps", choiceKey(&Config::mps)},
      {"daemon.mps_control", stringKey(&Config::mpsControl,
                                       [](const std::string& control, const std::string& k) {
                                         if (control.empty()) fail(k, "must name the control program");
                                       })},
      {"daemon.mps_pipe_directory", stringKey(&Config::mpsPipeDirectory)},
      {"daemon.mps_log_directory", stringKey(&Config::mpsLogDirectory)},
      {"kernelopt.resizable_kernels", fieldKey(&Config::resizableKernels, readStringList)},
      {"kernelopt.reply_timeout_ms", integerKey(&Config::launchReplyTimeoutMilliseconds, 1, 10'000)},
      {"kernelopt.lease_ms", integerKey(&Config::launchLeaseMilliseconds, 10, 3'600'000)},
      {"daemon.metrics_file", stringKey(&Config::metricsFile)},
      {"daemon.metrics_port", integerKey(&Config::metricsPort, 0, 65535)},
      {"daemon.metrics_client_identities", boolKey(&Config::metricsClientIdentities)},
      {"daemon.metrics_interval_ms", integerKey(&Config::metricsIntervalMilliseconds, 10, 3'600'000)},
      {"trace.file", stringKey(&Config::traceFile)},
      {"trace.buffer_events", integerKey(&Config::traceBufferEvents, 1, 16'777'216)},
      {"log.level", choiceKey(&Config::logLevel)},
  };
  return table;
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

// "MQX_<SECTION>_" -> "section" for every section of the key table.
const std::map<std::string, std::string>& sectionPrefixes() {
  static const std::map<std::string, std::string> prefixes = [] {
    std::map<std::string, std::string> result;
    for (const auto& [key, handler] : keyTable()) {
      const std::string section = key.substr(0, key.find('.'));
      result["MQX_" + upper(section) + "_"] = section;
    }
    return result;
  }();
  return prefixes;
}

// MQX_SIM_COPY_BANDWIDTH_GBPS for sim.copy_bandwidth_gbps.
std::string variableOf(const std::string& key) {
  std::string name = "MQX_" + upper(key);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
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
    it->second.set(config, RawValue{&node, {}}, key);
  }
}

} // namespace

namespace config_detail {
const std::map<std::string, std::string>& sectionPrefixes() { return mqx::sectionPrefixes(); }
std::string variableOf(const std::string& key) { return mqx::variableOf(key); }
std::string oneLine(const std::string& text) { return mqx::oneLine(text); }
std::vector<std::string> configKeys() {
  std::vector<std::string> keys;
  for (const auto& [key, handler] : keyTable())
    keys.push_back(key);
  return keys;
}
} // namespace config_detail

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
  // The whole part in integers, exactly: through a double, 2^63-1 became
  // 2^63. Only a fraction (1.5MiB) goes through floating point, below one
  // unit.
  const std::size_t point = std::min(t.find('.'), t.size());
  const std::size_t largest = std::numeric_limits<std::size_t>::max() / 2;
  std::size_t whole = 0;
  if (point > 0 && std::from_chars(t.data(), t.data() + point, whole).ec != std::errc{})
    fail(key, "size '" + text + "' too large");
  if (whole > largest / multiplier) fail(key, "size '" + text + "' too large");
  std::size_t bytes = whole * multiplier;
  if (point + 1 < t.size()) {
    const long double fraction = std::stold("0" + t.substr(point));
    bytes += static_cast<std::size_t>(fraction * static_cast<long double>(multiplier));
  }
  if (bytes > largest) fail(key, "size '" + text + "' too large");
  return bytes;
}

void requireAsciiToml(const std::string& tomlText, const std::string& where) {
  std::size_t line = 1, column = 1;
  for (unsigned char c : tomlText) {
    if (c >= 0x80)
      throw ConfigError(fmt::format("{}:{}:{}: non-ASCII character (mqx configuration and plan files are ASCII)", where,
                                    line, column));
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
  for (const auto& [name, value] : environment) {
    for (const auto& [prefix, section] : sectionPrefixes()) {
      if (!name.starts_with(prefix)) continue;
      std::string key = section + "." + lower(name.substr(prefix.size()));
      auto it = keyTable().find(key);
      if (it == keyTable().end()) fail(name, "unknown configuration variable (no key " + key + ")");
      it->second.set(config, RawValue{nullptr, value}, name);
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

std::string toString(ReplacementKind kind) { return choiceName(kind); }

std::string toString(AdmissionKind kind) { return choiceName(kind); }

std::string toString(MpsMode mode) { return choiceName(mode); }

std::string toString(PlacementKind kind) { return choiceName(kind); }

std::map<std::string, ConfigValue> configValues(const Config& config) {
  std::map<std::string, ConfigValue> values;
  for (const auto& [key, handler] : keyTable())
    values.emplace(key, handler.show(config));
  return values;
}

std::optional<ConfigValue> configValue(const Config& config, const std::string& key) {
  auto it = keyTable().find(key);
  if (it == keyTable().end()) return std::nullopt;
  return it->second.show(config);
}

} // namespace mqx
