#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/config.hpp"

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

} // namespace
} // namespace mqx
