#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <variant>

#include "config/config.hpp"
#include "config/config_keys.hpp"

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
  for (const Case& c : {Case{"[memory]\npage_sise = 1", "memory.page_sise"}, Case{"[memroy]\npage_size = 1", "memroy"},
                        Case{"[policy]\nreplacement = \"fifo\"", "policy.replacement"},
                        Case{"[policy]\nlatency_factor = 2.0", "policy.latency_factor"},
                        Case{"[policy]\nlatency_factor = \"x\"", "policy.latency_factor"},
                        Case{"[memory]\npage_size = \"3MiB\"", "memory.page_size"},
                        Case{"[memory]\npage_size = \"lots\"", "memory.page_size"},
                        Case{"[memory]\npage_size = -4", "memory.page_size"},
                        Case{"[optimizations]\nlazy_transfer = 1", "optimizations.lazy_transfer"},
                        Case{"[sim]\ngranularity = \"16MiB\"", "sim.granularity"}, Case{"top = 1", "top"}}) {
    std::string error = errorOf(c.toml);
    EXPECT_NE(error.find(c.key), std::string::npos) << c.toml << " -> " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_NE(errorOf("[memory\n").find("test.toml:"), std::string::npos);
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

} // namespace
} // namespace mqx
