#include "ssb/datagen/generator.hpp"

#include "ssb/common/table_writer.hpp"
#include "ssb/datagen/customer_table.hpp"
#include "ssb/datagen/date_table.hpp"
#include "ssb/datagen/lineorder_table.hpp"
#include "ssb/datagen/part_table.hpp"
#include "ssb/datagen/scale.hpp"
#include "ssb/datagen/supplier_table.hpp"

#include <algorithm>
#include <future>
#include <thread>
#include <vector>

namespace mqx::ssb {
namespace {

using ChunkColumns = std::vector<std::vector<std::int32_t>>;

void report(const GeneratorOptions &options, const std::string &line) {
  if (options.progress)
    options.progress(line);
}

unsigned workerCount(const GeneratorOptions &options) {
  if (options.threads > 0)
    return options.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

// Starts generating chunks [first, first + buffers.size()) into `buffers`.
std::vector<std::future<void>> launchBatch(const LineorderGenerator &generator, std::int64_t first,
                                           std::vector<ChunkColumns> &buffers) {
  std::vector<std::future<void>> pending;
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    std::int64_t chunk = first + static_cast<std::int64_t>(k);
    if (chunk >= generator.chunkCount())
      break;
    pending.push_back(std::async(std::launch::async, [&generator, chunk, &buffer = buffers[k]] {
      generator.generateChunk(chunk, buffer);
    }));
  }
  return pending;
}

// Workers generate batch k + 1 while this thread writes batch k, in chunk
// order, so the file content is independent of scheduling.
TableEntry writeLineorder(const GeneratorOptions &options, const Cardinalities &cardinalities) {
  LineorderGenerator generator(LineorderParameters{cardinalities.orders, cardinalities.customers,
                                                   cardinalities.suppliers, cardinalities.parts,
                                                   options.seed});
  TableWriter writer(options.outDir, TableId::Lineorder, generator.dictionaries());
  unsigned workers = workerCount(options);
  std::vector<ChunkColumns> current(workers), next(workers);
  std::vector<std::future<void>> pending = launchBatch(generator, 0, current);
  std::int64_t chunks = generator.chunkCount();
  std::int64_t reportEvery = std::max<std::int64_t>(1, chunks / 10);
  for (std::int64_t first = 0; first < chunks; first += workers) {
    for (auto &future : pending)
      future.get();
    pending = launchBatch(generator, first + workers, next);
    std::size_t ready = static_cast<std::size_t>(std::min<std::int64_t>(workers, chunks - first));
    for (std::size_t k = 0; k < ready; ++k)
      writer.append(current[k]);
    std::swap(current, next);
    if ((first / workers) % std::max<std::int64_t>(1, reportEvery / workers) == 0)
      report(options, "lineorder: " + std::to_string(first + static_cast<std::int64_t>(ready)) +
                          "/" + std::to_string(chunks) + " chunks");
  }
  return writer.finish();
}

TableEntry writeGenerated(const GeneratorOptions &options, GeneratedTable generated) {
  return writeTable(options.outDir, generated.table, std::move(generated.dictionaries));
}

} // namespace

Manifest generateSsb(const GeneratorOptions &options) {
  Cardinalities cardinalities = cardinalitiesFor(options.scaleFactor);
  std::filesystem::create_directories(options.outDir);
  // A stale manifest would describe the old files while the new ones are
  // being written.
  std::filesystem::remove(options.outDir / kManifestFileName);

  Manifest manifest;
  manifest.scaleFactor = options.scaleFactor;
  manifest.seed = options.seed;
  manifest.generator = std::string(kGeneratorName);
  report(options, "date, customer, supplier, part");
  manifest.tables.push_back(TableEntry{}); // lineorder goes first, as in the schema
  manifest.tables.push_back(
      writeGenerated(options, generateCustomerTable(cardinalities.customers, options.seed)));
  manifest.tables.push_back(
      writeGenerated(options, generateSupplierTable(cardinalities.suppliers, options.seed)));
  manifest.tables.push_back(
      writeGenerated(options, generatePartTable(cardinalities.parts, options.seed)));
  manifest.tables.push_back(writeGenerated(options, generateDateTable()));
  manifest.tables.front() = writeLineorder(options, cardinalities);

  writeManifest(options.outDir, manifest);
  return manifest;
}

} // namespace mqx::ssb
