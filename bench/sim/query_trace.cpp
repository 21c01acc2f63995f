#include "query_trace.hpp"

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/memory_manager.hpp"
#include "embedded/runtime_options.hpp"
#include "hook/host_memory_hooks.hpp"

namespace mqx::bench {
namespace {

// Returns the first error of a step that reports one as a string.
#define MQX_CHECK(expr)                                                                                                \
  do {                                                                                                                 \
    std::string error_ = (expr);                                                                                       \
    if (!error_.empty()) return error_;                                                                                \
  } while (0)

// out[i] = a[i] * 3 + b[i % nb] + seed: one kernel stands for every operator;
// what matters here is which regions it reads and writes, and that the
// result is checkable.
void mix(const std::uint8_t* a, const std::uint8_t* b, std::uint64_t nb, std::uint8_t* out, std::uint64_t n,
         std::uint8_t seed) {
  for (std::uint64_t i = 0; i < n; ++i)
    out[i] = static_cast<std::uint8_t>(a[i] * 3 + (b != nullptr ? b[i % nb] : 0) + seed);
}

struct HostRegion {
  std::vector<std::uint8_t> data;
};

struct Operator {
  int inputA; // index into the query's buffers
  int inputB; // -1: none
  int output;
};

// One query: 4 input columns, 3 intermediates, 1 result.
struct Query {
  std::vector<std::size_t> sizes;              // per buffer
  std::vector<std::vector<std::uint8_t>> host; // inputs (host copies) and references
  std::vector<DevicePtr> device;
  std::vector<Operator> plan;
};

class TraceRun {
public:
  TraceRun(const Config& config, const TraceShape& shape)
      : shape_(shape), random_(shape.seed), backend_(embedded::simBackendOptions(config)),
        manager_(embedded::managerOptions(config), backend_) {
    hook::registerHostMemoryManager(&manager_);
    kernel_ = backend_.registerKernel(
        [](const device::SimKernelContext&, void** p) {
          mix(*static_cast<std::uint8_t**>(p[0]), *static_cast<std::uint8_t**>(p[1]),
              *static_cast<std::uint64_t*>(p[2]), *static_cast<std::uint8_t**>(p[3]),
              *static_cast<std::uint64_t*>(p[4]), *static_cast<std::uint8_t*>(p[5]));
        },
        {{0, 8}, {8, 8}, {16, 8}, {24, 8}, {32, 8}, {40, 1}});
  }
  ~TraceRun() { hook::registerHostMemoryManager(nullptr); }

  std::string run() {
    for (int q = 0; q < shape_.queries; ++q)
      queries_.push_back(makeQuery());
    for (int repetition = 0; repetition < shape_.repetitions; ++repetition) {
      for (auto& query : queries_)
        MQX_CHECK(startQuery(query));
      // Interleave the queries operator by operator.
      for (std::size_t step = 0; step < queries_[0].plan.size(); ++step)
        for (auto& query : queries_)
          MQX_CHECK(runOperator(query, query.plan[step], repetition));
      for (auto& query : queries_) {
        std::string error = finishQuery(query, repetition);
        if (!error.empty()) return error;
      }
    }
    return {};
  }

  Statistics statistics() const { return manager_.statistics(); }
  device::SimTransferTotals transfers() const { return backend_.transferTotals(); }

private:
  static std::string check(Status status, const char* what) {
    return ok(status) ? std::string{} : std::string(what) + ": " + std::string(toString(status));
  }

  std::size_t columnBytes() {
    const std::size_t mean = shape_.columnMiB << 20;
    return std::uniform_int_distribution<std::size_t>(mean / 2, mean * 3 / 2)(random_) & ~std::size_t{4095};
  }

  Query makeQuery() {
    Query query;
    for (int i = 0; i < 4; ++i)
      query.sizes.push_back(columnBytes());
    // Each operator overwrites its whole output and reads at least as much
    // of its first input, so the output-only advice is truthful.
    query.sizes.push_back(query.sizes[0] / 3);                             // selection result
    query.sizes.push_back(query.sizes[4]);                                 // projection
    query.sizes.push_back(query.sizes[4]);                                 // probe output
    query.sizes.push_back(std::min<std::size_t>(1 << 20, query.sizes[4])); // aggregate
    for (int i = 0; i < 4; ++i) {
      std::vector<std::uint8_t> column(query.sizes[i]);
      for (auto& byte : column)
        byte = static_cast<std::uint8_t>(random_());
      query.host.push_back(std::move(column));
    }
    query.host.resize(8);
    query.device.assign(8, 0);
    // select(col0) -> 4; project(4, col1) -> 5; probe(5, col2 as hash table) -> 6;
    // aggregate(6, col3) -> 7
    query.plan = {{0, -1, 4}, {4, 1, 5}, {5, 2, 6}, {6, 3, 7}};
    return query;
  }

  std::string startQuery(Query& query) {
    for (int i = 0; i < 8; ++i) {
      if (query.device[i] != 0) continue; // inputs stay allocated across repetitions
      MQX_CHECK(check(manager_.allocate(query.sizes[i], &query.device[i]), "allocate"));
      if (i < 4)
        MQX_CHECK(check(manager_.copyHostToDevice(query.device[i], query.host[i].data(), query.sizes[i], 0, true),
                        "copy input"));
    }
    for (int i = 4; i < 8; ++i)
      query.host[i].assign(query.sizes[i], 0);
    return {};
  }

  std::string runOperator(Query& query, const Operator& op, int repetition) {
    const std::uint64_t n = query.sizes[op.output];
    const auto seed = static_cast<std::uint8_t>(op.output + repetition);
    const std::uint64_t nb = op.inputB >= 0 ? query.sizes[op.inputB] : 1;
    // Reference.
    mix(query.host[op.inputA].data(), op.inputB >= 0 ? query.host[op.inputB].data() : nullptr, nb,
        query.host[op.output].data(), n, seed);
    // mqx: advice as the operator library gives it.
    if (Status status = manager_.advise(query.device[op.inputA], Access::Input); !ok(status))
      return check(status, "advise");
    if (op.inputB >= 0)
      if (Status status = manager_.advise(query.device[op.inputB], Access::Input); !ok(status))
        return check(status, "advise");
    if (Status status = manager_.advise(query.device[op.output], Access::Output); !ok(status))
      return check(status, "advise");
    void* a = reinterpret_cast<void*>(query.device[op.inputA]);
    void* b = op.inputB >= 0 ? reinterpret_cast<void*>(query.device[op.inputB]) : nullptr;
    void* out = reinterpret_cast<void*>(query.device[op.output]);
    std::uint64_t count = n, bytesB = nb;
    std::uint8_t seedValue = seed;
    void* params[] = {&a, &b, &bytesB, &out, &count, &seedValue};
    device::KernelLaunch launch;
    launch.function = kernel_;
    launch.params = params;
    return check(manager_.launch(launch), "launch");
  }

  std::string finishQuery(Query& query, int repetition) {
    std::vector<std::uint8_t> result(query.sizes[7]);
    MQX_CHECK(check(manager_.copyDeviceToHost(result.data(), query.device[7], result.size(), 0, true), "result"));
    if (result != query.host[7])
      return "query result differs from the reference (repetition " + std::to_string(repetition) + ")";
    for (int i = 4; i < 8; ++i) {
      MQX_CHECK(check(manager_.free(query.device[i]), "free"));
      query.device[i] = 0;
    }
    if (repetition + 1 == shape_.repetitions)
      for (int i = 0; i < 4; ++i)
        MQX_CHECK(check(manager_.free(query.device[i]), "free input"));
    return {};
  }

  TraceShape shape_;
  std::mt19937_64 random_;
  device::SimBackend backend_;
  MemoryManager manager_;
  FunctionHandle kernel_ = 0;
  std::vector<Query> queries_;
};

} // namespace

TraceResult runTrace(const std::string& name, const Config& config, const TraceShape& shape) {
  TraceResult result;
  result.name = name;
  const auto start = std::chrono::steady_clock::now();
  {
    TraceRun run(config, shape);
    result.error = run.run();
    result.statistics = run.statistics();
    result.transfers = run.transfers();
  }
  result.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.correct = result.error.empty();
  return result;
}

} // namespace mqx::bench

#undef MQX_CHECK
