#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <variant>

#include "config/config.hpp"
#include "config/config_keys.hpp"
#include "config/installed_config.hpp"
#include "embedded/runtime_options.hpp"

namespace mqx {
namespace {

std::string errorOf(const std::string& toml) {
  try {
    parseConfig(toml, "test.toml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return {};
}

TEST(Config, DefaultFileParsesToTheBuiltInDefaults) {
  std::ifstream file(std::string(MQX_SOURCE_DIR) + "/configs/default.toml");
  ASSERT_TRUE(file) << "configs/default.toml missing";
  std::stringstream text;
  text << file.rdbuf();
  Config parsed = parseConfig(text.str(), "default.toml");
  Config builtIn;
  EXPECT_EQ(parsed.pageSize, builtIn.pageSize);
  EXPECT_EQ(parsed.deviceMemoryLimit, builtIn.deviceMemoryLimit);
  EXPECT_EQ(parsed.swapBufferLimit, builtIn.swapBufferLimit);
  EXPECT_EQ(parsed.replacement, builtIn.replacement);
  EXPECT_DOUBLE_EQ(parsed.latencyFactor, builtIn.latencyFactor);
  EXPECT_EQ(parsed.evictionGranularity, builtIn.evictionGranularity);
  EXPECT_EQ(parsed.lazyTransfer, builtIn.lazyTransfer);
  EXPECT_EQ(parsed.copyOnWrite, builtIn.copyOnWrite);
  EXPECT_EQ(parsed.cowMinBytes, builtIn.cowMinBytes);
  EXPECT_EQ(parsed.referenceDetection, builtIn.referenceDetection);
  EXPECT_EQ(parsed.accessAdvice, builtIn.accessAdvice);
  EXPECT_EQ(parsed.pageCoherence, builtIn.pageCoherence);
  EXPECT_EQ(parsed.simCapacity, builtIn.simCapacity);
  EXPECT_EQ(parsed.simDevices, builtIn.simDevices);
  EXPECT_EQ(parsed.simDevice, builtIn.simDevice);
  EXPECT_EQ(parsed.placement, builtIn.placement);
  EXPECT_EQ(parsed.logLevel, builtIn.logLevel);
  EXPECT_EQ(parsed.fenceCoalesceMicroseconds, builtIn.fenceCoalesceMicroseconds);
}

TEST(Config, ParsesSizesAndChoices) {
  Config config = parseConfig(R"(
[memory]
page_size = "16MiB"
device_memory_limit = 1073741824
[policy]
replacement = "LFU"
eviction_granularity = "page"
latency_factor = 0.5
[optimizations]
reference_detection = "scan"
)");
  EXPECT_EQ(config.pageSize, 16U << 20);
  EXPECT_EQ(config.deviceMemoryLimit, 1U << 30);
  EXPECT_EQ(config.replacement, ReplacementKind::Lfu);
  EXPECT_EQ(config.evictionGranularity, EvictionGranularity::Page);
  EXPECT_DOUBLE_EQ(config.latencyFactor, 0.5);
  EXPECT_EQ(config.referenceDetection, ReferenceDetection::Scan);
}

TEST(Config, BadInputNamesTheKeyOnOneLine) {
  struct Case {
    const char* toml;
    const char* key;
  };
  for (const Case& c :
       {Case{"[memory]\npage_sise = 1", "memory.page_sise"}, Case{"[memroy]\npage_size = 1", "memroy"},
        Case{"[policy]\nreplacement = \"fifo\"", "policy.replacement"},
        Case{"[policy]\nlatency_factor = 2.0", "policy.latency_factor"},
        Case{"[policy]\nlatency_factor = \"x\"", "policy.latency_factor"},
        Case{"[policy]\nwrite_back_ahead = 0.75", "policy.write_back_ahead"},
        Case{"[policy]\nwrite_back_ahead = -0.1", "policy.write_back_ahead"},
        Case{"[policy]\nwrite_back_ahead_quiet_operations = -1", "policy.write_back_ahead_quiet_operations"},
        Case{"[policy]\nspare_pages = 17", "policy.spare_pages"},
        Case{"[policy]\nspare_pages = true", "policy.spare_pages"},
        Case{"[memory]\npage_size = \"3MiB\"", "memory.page_size"},
        Case{"[memory]\npage_size = \"lots\"", "memory.page_size"},
        Case{"[memory]\npage_size = -4", "memory.page_size"},
        Case{"[optimizations]\nlazy_transfer = 1", "optimizations.lazy_transfer"},
        Case{"[sim]\ngranularity = \"128MiB\"", "sim.granularity"}, Case{"top = 1", "top"}}) {
    std::string error = errorOf(c.toml);
    EXPECT_NE(error.find(c.key), std::string::npos) << c.toml << " -> " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_NE(errorOf("[memory\n").find("test.toml:"), std::string::npos);
}

// A node of several devices (docs/daemon.md, "Several GPUs"): sim.devices,
// sim.device and daemon.placement, from a file and from the environment.
TEST(Config, DeviceKeysParseAndRefuseBadValuesNamingTheKey) {
  Config defaults;
  EXPECT_EQ(defaults.simDevices, 1u);
  EXPECT_EQ(defaults.simDevice, "");
  EXPECT_EQ(defaults.placement, PlacementKind::Demand);
  Config config = parseConfig("[sim]\ndevices = 8\ndevice = \"sim-7\"\n[daemon]\nplacement = \"round-robin\"\n");
  EXPECT_EQ(config.simDevices, 8u);
  EXPECT_EQ(config.simDevice, "sim-7");
  EXPECT_EQ(config.placement, PlacementKind::RoundRobin);
  EXPECT_EQ(toString(config.placement), "round-robin");
  applyEnvironment(config, {{"MQX_SIM_DEVICES", "2"}, {"MQX_SIM_DEVICE", "1"}, {"MQX_DAEMON_PLACEMENT", "demand"}});
  EXPECT_EQ(config.simDevices, 2u);
  EXPECT_EQ(config.simDevice, "1");
  EXPECT_EQ(config.placement, PlacementKind::Demand);
  struct Case {
    const char* toml;
    const char* key;
    const char* says;
  };
  for (const Case& c :
       {Case{"[sim]\ndevices = 0", "sim.devices", "out of range [1, 8]"},
        Case{"[sim]\ndevices = 9", "sim.devices", "out of range [1, 8]"},
        Case{"[sim]\ndevices = \"two\"", "sim.devices", "integer"},
        Case{"[sim]\ndevice = \"sim-8\"", "sim.device", "'sim-8'"},
        Case{"[sim]\ndevice = \"GPU-1234\"", "sim.device", "sim-<n>"},
        Case{"[sim]\ndevice = \"sim-\"", "sim.device", "'sim-'"}, Case{"[sim]\ndevice = 1", "sim.device", "string"},
        Case{"[daemon]\nplacement = \"random\"", "daemon.placement", "demand, round-robin"}}) {
    const std::string error = errorOf(c.toml);
    EXPECT_NE(error.find("mqx config: " + std::string(c.key) + ":"), std::string::npos) << c.toml << " -> " << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.toml << " -> " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  Config untouched;
  EXPECT_THROW(applyEnvironment(untouched, {{"MQX_SIM_DEVICES", "12"}}), ConfigError);
  EXPECT_THROW(applyEnvironment(untouched, {{"MQX_SIM_DEVICE", "sim-x"}}), ConfigError);
  EXPECT_THROW(applyEnvironment(untouched, {{"MQX_DAEMON_PLACEMENT", "roundrobin"}}), ConfigError);
}

TEST(Config, EnvironmentOverridesAndRejectsUnknownVariables) {
  Config config;
  applyEnvironment(config, {{"MQX_MEMORY_PAGE_SIZE", "4MiB"},
                            {"MQX_POLICY_REPLACEMENT", "mru"},
                            {"MQX_OPTIMIZATIONS_LAZY_TRANSFER", "off"},
                            {"MQX_SIM_COPY_BANDWIDTH_GBPS", "12.5"},
                            {"MQX_CONFIG", "ignored-here"},
                            {"HOME", "/root"}});
  EXPECT_EQ(config.pageSize, 4U << 20);
  EXPECT_EQ(config.replacement, ReplacementKind::Mru);
  EXPECT_FALSE(config.lazyTransfer);
  EXPECT_DOUBLE_EQ(config.simCopyBandwidthGBps, 12.5);

  Config untouched;
  EXPECT_THROW(applyEnvironment(untouched, {{"MQX_MEMORY_PAGESIZE", "1"}}), ConfigError);
  try {
    applyEnvironment(untouched, {{"MQX_POLICY_LATENCY_FACTOR", "-1"}});
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("MQX_POLICY_LATENCY_FACTOR"), std::string::npos);
  }
}

TEST(Config, SizeParsing) {
  EXPECT_EQ(parseSize("4096", "k"), 4096U);
  EXPECT_EQ(parseSize("512KiB", "k"), 512U * 1024);
  EXPECT_EQ(parseSize("2 GiB", "k"), 2ULL << 30);
  EXPECT_EQ(parseSize("1.5MiB", "k"), 3U << 19);
  EXPECT_EQ(parseSize("10GB", "k"), 10'000'000'000ULL);
  EXPECT_THROW(parseSize("MiB", "k"), ConfigError);
  EXPECT_THROW(parseSize("-1", "k"), ConfigError);
}

// A value as an MQX_<SECTION>_<KEY> variable would spell it.
std::string environmentText(const ConfigValue& value) {
  struct Spell {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::uint64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<std::string>& list) const {
      return fmt::format("{}", fmt::join(list, ","));
    }
  };
  return std::visit(Spell{}, value);
}

std::string environmentName(const std::string& key) {
  std::string name = "MQX_" + key;
  for (char& c : name)
    c = c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

TEST(Config, ValuesListEveryKeyAndReadBackThroughTheEnvironment) {
  const Config config = parseConfig(R"(
[memory]
page_size = "16MiB"
pinned_swap = false
[policy]
replacement = "lfu"
latency_factor = 0.25
random_seed = 7
write_back_ahead = 0.1
write_back_ahead_quiet_operations = 5
spare_pages = 2
[optimizations]
reference_detection = "scan"
[daemon]
instance = "abc"
fix_n = 3
mps = "detect"
[kernelopt]
resizable_kernels = ["a", "b"]
[log]
level = "debug"
)");
  const auto values = configValues(config);
  EXPECT_EQ(values.at("memory.page_size"), ConfigValue{std::uint64_t{16} << 20});
  EXPECT_EQ(values.at("memory.pinned_swap"), ConfigValue{false});
  EXPECT_EQ(values.at("policy.replacement"), ConfigValue{std::string("lfu")});
  EXPECT_EQ(values.at("policy.latency_factor"), ConfigValue{0.25});
  EXPECT_EQ(values.at("policy.write_back_ahead"), ConfigValue{0.1});
  EXPECT_EQ(embedded::managerOptions(config).residency.writeBackAheadFraction, 0.1);
  EXPECT_EQ(values.at("policy.write_back_ahead_quiet_operations"), ConfigValue{std::uint64_t{5}});
  EXPECT_EQ(embedded::managerOptions(config).residency.writeBackAheadQuietOperations, 5U);
  EXPECT_EQ(values.at("policy.spare_pages"), ConfigValue{std::uint64_t{2}});
  EXPECT_EQ(embedded::managerOptions(config).residency.sparePages, 2U);
  EXPECT_EQ(values.at("daemon.mps"), ConfigValue{std::string("detect")});
  const std::vector<std::string> kernels = {"a", "b"};
  EXPECT_EQ(values.at("kernelopt.resizable_kernels"), ConfigValue{kernels});
  EXPECT_EQ(values.at("log.level"), ConfigValue{std::string("debug")});
  EXPECT_EQ(configValue(config, "daemon.fix_n"), ConfigValue{std::uint64_t{3}});
  EXPECT_FALSE(configValue(config, "memory.nothing"));

  // Each key's value, written back as its variable, reads to the same value:
  // what the table shows and what it parses agree, key by key.
  std::map<std::string, std::string> environment;
  for (const auto& [key, value] : values)
    environment[environmentName(key)] = environmentText(value);
  Config readBack;
  applyEnvironment(readBack, environment);
  EXPECT_EQ(configValues(readBack), values);
}

// The message of the ConfigError that loading with `environment` throws; ""
// when it loads.
std::string loadErrorOf(const std::map<std::string, std::string>& environment) {
  try {
    loadConfig(environment);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return {};
}

// A private directory under the test's temporary folder, removed at the end.
class ScratchDirectory {
public:
  ScratchDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mqx-config-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

// The error names the variable and the path on one line, as mqxd, mqx-run and
// libmqx.so print it (they all load through loadConfig).
void expectFileRefused(const std::string& path, const std::string& why) {
  const std::string error = loadErrorOf({{"MQX_CONFIG", path}});
  EXPECT_EQ(error.rfind("mqx config: MQX_CONFIG: ", 0), 0U) << error;
  EXPECT_NE(error.find("'" + path + "'"), std::string::npos) << error;
  EXPECT_NE(error.find(why), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(ConfigFile, DirectoryIsAnErrorNotTheDefaults) {
  ScratchDirectory directory;
  expectFileRefused(directory.path().string(), "is a directory");
  // Python's load_config(path=...) reads through the same function.
  try {
    loadConfig({}, directory.path().string());
    FAIL() << "a directory loaded";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("mqx config: path: '" + directory.path().string() + "'"),
              std::string::npos)
        << error.what();
  }
}

// An installed mqx (cmake --install, the .deb) reads PREFIX/etc/mqx/mqx.toml
// when MQX_CONFIG names no file; a build tree keeps the defaults (issue 18).
TEST(ConfigFile, TheInstalledConfigurationIsFoundNextToTheInstalledPrograms) {
  ScratchDirectory directory;
  const auto prefix = directory.path() / "prefix";
  std::filesystem::create_directories(prefix / "bin");
  std::filesystem::create_directories(prefix / "lib" / "x86_64-linux-gnu");
  EXPECT_EQ(installedConfigFileFor(prefix / "bin" / "mqxd"), std::nullopt) << "no file installed yet";
  std::filesystem::create_directories(prefix / "etc" / "mqx");
  const auto file = prefix / "etc" / "mqx" / "mqx.toml";
  std::ofstream(file) << "[daemon]\ncapacity = \"24MiB\"\n";
  for (const auto& object : {prefix / "bin" / "mqxd", prefix / "bin" / "mqx-run", prefix / "lib" / "libmqx.so",
                             prefix / "lib" / "x86_64-linux-gnu" / "libmqx.so"})
    EXPECT_EQ(installedConfigFileFor(object), std::optional(file.string())) << object;
  EXPECT_EQ(installedConfigFileFor(prefix / "share" / "mqxd"), std::nullopt) << "only bin/ and lib/ are installed";
  EXPECT_EQ(installedConfigFileFor(directory.path() / "build" / "bin" / "mqxd"), std::nullopt)
      << "a build tree has no etc/";
  // The prefix /usr keeps its configuration in /etc.
  const bool etcHasOne = std::filesystem::exists("/etc/mqx/mqx.toml");
  EXPECT_EQ(installedConfigFileFor("/usr/bin/mqxd").has_value(), etcHasOne);

  // MQX_CONFIG (or Python's path) wins over the installed file; without
  // them the installed file is read, and the environment still overrides.
  const std::string other = (directory.path() / "other.toml").string();
  std::ofstream(other) << "[daemon]\ncapacity = \"8MiB\"\n";
  EXPECT_EQ(loadConfig({}, std::nullopt, file.string()).daemonCapacity, 24u << 20);
  EXPECT_EQ(loadConfig({{"MQX_CONFIG", other}}, std::nullopt, file.string()).daemonCapacity, 8u << 20);
  EXPECT_EQ(loadConfig({}, other, file.string()).daemonCapacity, 8u << 20);
  EXPECT_EQ(loadConfig({{"MQX_DAEMON_CAPACITY", "4MiB"}}, std::nullopt, file.string()).daemonCapacity, 4u << 20);
  // A broken installed file is an error naming it, not the defaults.
  std::ofstream(file) << "[daemon]\ncapacty = 1\n";
  try {
    loadConfig({}, std::nullopt, file.string());
    FAIL() << "a broken installed configuration loaded";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find(file.string()), std::string::npos) << error.what();
  }
}

TEST(ConfigFile, DevicesAndPipesAreRefusedWithoutReading) {
  const auto start = std::chrono::steady_clock::now();
  expectFileRefused("/dev/zero", "not a regular file");
  ScratchDirectory directory;
  const std::string pipe = (directory.path() / "pipe").string();
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  expectFileRefused(pipe, "not a regular file"); // opening it must not wait for a writer
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ConfigFile, FilesOverTheBoundAreRefused) {
  ScratchDirectory directory;
  const std::string path = (directory.path() / "big.toml").string();
  {
    std::ofstream file(path);
    file << "# " << std::string(kMaxConfigFileBytes, 'x') << "\n";
  }
  expectFileRefused(path, "larger than 1024 KiB");
  {
    std::ofstream file(path, std::ios::trunc);
    file << "# " << std::string(kMaxConfigFileBytes / 2, 'x') << "\n[daemon]\nfix_n = 3\n";
  }
  EXPECT_EQ(loadConfig({{"MQX_CONFIG", path}}).admissionFixN, 3U);
  expectFileRefused((directory.path() / "missing.toml").string(), "cannot read");
}

TEST(ConfigEnvironment, OnlyMisspelledVariablesAreUnknown) {
  const std::vector<std::string> unknown = unknownVariables({
      {"MQX_DEAMON_CAPACITY", "abc"},  // misspelled section
      {"MQX_CAPACITY", "1GiB"},        // no section
      {"MQX_DAEMON_CAPACITY", "1GiB"}, // a key
      {"MQX_DAEMON_CAPACTIY", "1GiB"}, // applyEnvironment's error, not a warning
      {"MQX_CONFIG", "x.toml"},        // the project's other variables
      {"MQX_BUILD_DIR", "build"},
      {"MQX_JOBS", "2"},
      {"MQX_QUERY_SLOT", "3"},
      {"MQX_DIFFERENTIAL_FIRST_SEED", "1"},
      {"MQXTEST_SIM_CLIENT", "x"},
      {"HOME", "/root"},
  });
  EXPECT_EQ(unknown, (std::vector<std::string>{"MQX_CAPACITY", "MQX_DEAMON_CAPACITY"}));
}

TEST(ConfigEnvironment, UnknownVariablesAreWarnedAboutOncePerProcess) {
  const std::map<std::string, std::string> environment = {{"MQX_DEAMON_CAPACITY", "abc"}, {"MQX_JOBS", "2"}};
  testing::internal::CaptureStderr();
  loadConfig(environment);
  loadConfig(environment);
  const std::string output = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
  EXPECT_NE(output.find("mqx config: MQX_DEAMON_CAPACITY: names no configuration key"), std::string::npos) << output;
  EXPECT_NE(output.find("did you mean MQX_DAEMON_CAPACITY?"), std::string::npos) << output;
}

// Every MQX_* variable the project reads or sets (getenv, os.environ,
// scripts, ctest's ENVIRONMENT) is a key or on the list of other variables:
// a new one that is not would be warned about in every process.
TEST(ConfigEnvironment, TheProjectsOwnVariablesAreNotWarnedAbout) {
  const std::regex reads(R"re((?:getenv\(|setenv\(|environ\.get\(|environ\[)"(MQX_[A-Z0-9_]+)")re"
                         R"re(|\$\{(MQX_[A-Z0-9_]+):-|export (MQX_[A-Z0-9_]+)=|ENVIRONMENT\s+"?(MQX_[A-Z0-9_]+)=)re");
  std::map<std::string, std::string> found;
  const std::filesystem::path root(MQX_SOURCE_DIR);
  for (const char* part : {"libmqx", "daemon", "python", "scripts", "tools", "bench", "tests", "advice_api"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / part)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || path.find("/corpus/") != std::string::npos ||
          path.find("/results/") != std::string::npos || path.find("node_modules") != std::string::npos ||
          entry.file_size() > 1'000'000)
        continue;
      std::ifstream file(entry.path());
      std::stringstream text;
      text << file.rdbuf();
      const std::string content = text.str();
      for (std::sregex_iterator match(content.begin(), content.end(), reads), end; match != end; ++match)
        for (std::size_t group = 1; group < match->size(); ++group)
          if ((*match)[group].matched) found[(*match)[group].str()] = path;
    }
  }
  EXPECT_TRUE(found.contains("MQX_BUILD_DIR") && found.contains("MQX_DIFFERENTIAL_FIRST_SEED"))
      << "scan found too little";
  for (const std::string& name : unknownVariables(found))
    ADD_FAILURE() << name << " (read in " << found[name]
                  << ") is neither a configuration key nor on config.cpp's list of other variables";
}

TEST(ConfigEnvironment, ValuesAreQuotedBackExactly) {
  Config config;
  try {
    applyEnvironment(config, {{"MQX_DAEMON_CAPACITY", "9223372036854775807"}});
    FAIL() << "2^63-1 bytes accepted";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("MQX_DAEMON_CAPACITY: size '9223372036854775807' out of range"), std::string::npos)
        << message;
    EXPECT_EQ(message.find("808"), std::string::npos) << message;
  }
  EXPECT_EQ(parseSize("9223372036854775807", "k"), 9223372036854775807ULL);
  EXPECT_EQ(parseSize("9007199254740993", "k"), 9007199254740993ULL); // 2^53+1: no double holds it
  for (const char* tooLarge : {"9223372036854775808", "18446744073709551616", "99999999999999999999999", "8388608TiB"})
    try {
      parseSize(tooLarge, "k");
      FAIL() << tooLarge << " accepted";
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find(std::string("'") + tooLarge + "'"), std::string::npos) << error.what();
    }
  const std::string latency = loadErrorOf({{"MQX_POLICY_LATENCY_FACTOR", "1.00000000000000000001e1"}});
  EXPECT_NE(latency.find("'1.00000000000000000001e1'"), std::string::npos) << latency;
  const std::string fixN = loadErrorOf({{"MQX_DAEMON_FIX_N", "0065"}});
  EXPECT_NE(fixN.find("'0065'"), std::string::npos) << fixN;
  const std::string inUnits = loadErrorOf({{"MQX_DAEMON_CAPACITY", "2048TiB"}});
  EXPECT_NE(inUnits.find("size '2048TiB' (2251799813685248 bytes) out of range"), std::string::npos) << inUnits;
}

} // namespace
} // namespace mqx
