#include "test_datasets.hpp"

#include "ssb/datagen/generator.hpp"
#include "temp_dir.hpp"

#include <map>
#include <memory>
#include <utility>

namespace mqx::ssb::test {
namespace {

struct Entry {
  std::unique_ptr<TempDir> tempDir;
  std::unique_ptr<Dataset> dataset;
};

} // namespace

void generateInto(const std::filesystem::path &dir, double scaleFactor, std::uint64_t seed,
                  unsigned threads) {
  GeneratorOptions options;
  options.scaleFactor = scaleFactor;
  options.seed = seed;
  options.outDir = dir;
  options.threads = threads;
  generateSsb(options);
}

const Dataset &generatedDataset(double scaleFactor, std::uint64_t seed) {
  static std::map<std::pair<double, std::uint64_t>, Entry> cache;
  auto key = std::make_pair(scaleFactor, seed);
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto tempDir = std::make_unique<TempDir>();
    generateInto(tempDir->path(), scaleFactor, seed, 2);
    auto dataset =
        std::make_unique<Dataset>(Dataset{tempDir->path(), SsbData::open(tempDir->path())});
    it = cache.emplace(key, Entry{std::move(tempDir), std::move(dataset)}).first;
  }
  return *it->second.dataset;
}

} // namespace mqx::ssb::test
