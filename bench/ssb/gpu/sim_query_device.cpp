#include "ssb/gpu/sim_query_device.hpp"

#include "ssb/gpu/operator_advice.hpp"
#include "ssb/gpu/sim_kernels.hpp"

#include "embedded/sim_device.hpp"

#include <fmt/format.h>

#include <type_traits>
#include <utility>
#include <vector>

namespace mqx::ssb::gpu {
namespace {

DevicePtr address(const void *pointer) { return reinterpret_cast<DevicePtr>(pointer); }

void check(Status status, const char *what) {
  if (!ok(status))
    throw DeviceError(fmt::format("sim device: {} failed: {}", what, toString(status)));
}

// A registered host kernel, typed by its parameters so that a launch passes
// exactly those types (the parameter buffer is read back through them).
template <class... Args> struct KernelHandle { FunctionHandle function; };
template <class... Args> KernelHandle<Args...> handleFor(void (*)(Args...));
template <auto Kernel> using HandleOf = decltype(handleFor(Kernel));

template <class... Args, std::size_t... I>
void invoke(void (*kernel)(Args...), void **params, std::index_sequence<I...>) {
  kernel(*static_cast<Args *>(params[I])...);
}

// Registers a host kernel with its parameter layout, laid out as a CUDA
// kernel's parameter buffer (each parameter at its alignment), so that mqx's
// parameter scan finds the pointers in it as on the GPU.
template <class... Args>
KernelHandle<Args...> registerKernel(device::SimBackend &backend, void (*kernel)(Args...)) {
  std::vector<device::ParamInfo> layout;
  std::size_t offset = 0;
  ((offset = roundUp(offset, alignof(Args)), layout.push_back({offset, sizeof(Args)}),
    offset += sizeof(Args)),
   ...);
  FunctionHandle function = backend.registerKernel(
      [kernel](const device::SimKernelContext &, void **params) {
        invoke(kernel, params, std::index_sequence_for<Args...>{});
      },
      std::move(layout));
  return {function};
}

} // namespace

// Every operator's kernel, registered once.
struct SimQueryDevice::Kernels {
  explicit Kernels(device::SimBackend &backend)
      : select(registerKernel(backend, &sim::selectKernel)),
        gather(registerKernel(backend, &sim::gatherKernel)),
        clear(registerKernel(backend, &sim::clearKernel)),
        build(registerKernel(backend, &sim::buildKernel)),
        probe(registerKernel(backend, &sim::probeKernel)),
        aggregate(registerKernel(backend, &sim::aggregateKernel)),
        fusedStar(registerKernel(backend, &sim::fusedStarKernel)) {}
  HandleOf<&sim::selectKernel> select;
  HandleOf<&sim::gatherKernel> gather;
  HandleOf<&sim::clearKernel> clear;
  HandleOf<&sim::buildKernel> build;
  HandleOf<&sim::probeKernel> probe;
  HandleOf<&sim::aggregateKernel> aggregate;
  HandleOf<&sim::fusedStarKernel> fusedStar;
};

namespace {

// Advice, then the launch, as the CUDA operators do (cudaAdvice right before
// the <<<>>>): the advice is consumed by this thread's next launch.
template <class... Args>
void launch(MemoryManager &manager, KernelHandle<Args...> kernel, const char *name,
            const LaunchAdvice &advice, std::type_identity_t<Args>... args) {
  for (const BufferAdvice &entry : advice)
    check(manager.advise(address(entry.buffer), static_cast<Access>(entry.access)), name);
  void *params[] = {&args...};
  device::KernelLaunch launch;
  launch.function = kernel.function;
  launch.params = params;
  check(manager.launch(launch), name);
}

} // namespace

SimQueryDevice::SimQueryDevice(const Config &config, const std::string &clientName)
    : device_(std::make_unique<embedded::SimDevice>(config, clientName)),
      kernels_(std::make_unique<Kernels>(device_->backend())) {}

SimQueryDevice::~SimQueryDevice() = default;

SimDeviceReport SimQueryDevice::report() const {
  return {device_->manager().statistics(), device_->backend().transferTotals(), device_->onNode()};
}

void *SimQueryDevice::allocateBytes(std::size_t bytes) {
  DevicePtr buffer = 0;
  check(device_->manager().allocate(bytes, &buffer), "allocate");
  return reinterpret_cast<void *>(buffer);
}

void SimQueryDevice::freeBytes(void *buffer) noexcept {
  (void)device_->manager().free(address(buffer));
}

void SimQueryDevice::upload(void *device, const void *host, std::size_t bytes) {
  check(device_->manager().copyHostToDevice(address(device), host, bytes, 0, true),
        "copy to device");
}

void SimQueryDevice::download(void *host, const void *device, std::size_t bytes) {
  check(device_->manager().copyDeviceToHost(host, address(device), bytes, 0, true), "copy to host");
}

void SimQueryDevice::zero(void *device, std::size_t bytes) {
  check(device_->manager().memset(address(device), 0, 1, bytes, 0, true), "memset");
}

void SimQueryDevice::synchronize() {
  check(device_->manager().synchronizeAll(), "synchronize");
  device_->manager().poll(); // unpins what completed
}

std::int32_t SimQueryDevice::readCounter(const std::uint32_t *counter) {
  std::uint32_t value = 0;
  download(&value, counter, sizeof value);
  return static_cast<std::int32_t>(value);
}

std::int32_t SimQueryDevice::selectRows(const std::int32_t *column, const std::int32_t *selection,
                                        std::int32_t n, ValueSet accepted, std::int32_t *out,
                                        std::uint32_t *counter) {
  if (n == 0)
    return 0;
  zero(counter, sizeof *counter);
  launch(device_->manager(), kernels_->select, "select",
         selectAdvice(column, selection, out, counter), column, selection, n, accepted, out,
         counter);
  return readCounter(counter);
}

void SimQueryDevice::gather(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
                            std::int32_t *out) {
  if (n == 0)
    return;
  launch(device_->manager(), kernels_->gather, "gather", gatherAdvice(source, indices, out), source,
         indices, n, out);
  synchronize();
}

void SimQueryDevice::buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                                    const std::int32_t *selection, std::int32_t n,
                                    DeviceHashTable table) {
  launch(device_->manager(), kernels_->clear, "clear hash table", clearTableAdvice(table), table);
  if (n > 0)
    launch(device_->manager(), kernels_->build, "build hash table",
           buildAdvice(keys, payload, selection, table), keys, payload, selection, n, table);
  synchronize();
}

std::int32_t SimQueryDevice::probeHashTable(const std::int32_t *foreignKeys,
                                            const std::int32_t *selection, std::int32_t n,
                                            DeviceHashTable table, std::int32_t *rowsOut,
                                            std::int32_t *positionsOut, std::int32_t *payloadOut,
                                            std::uint32_t *counter) {
  if (n == 0)
    return 0;
  zero(counter, sizeof *counter);
  launch(device_->manager(), kernels_->probe, "probe",
         probeAdvice(foreignKeys, selection, table, rowsOut, positionsOut, payloadOut, counter),
         foreignKeys, selection, n, table, rowsOut, positionsOut, payloadOut, counter);
  return readCounter(counter);
}

void SimQueryDevice::aggregateGroups(GroupKeys keys, DeviceMeasure measure,
                                     const std::int32_t *first, const std::int32_t *second,
                                     std::int32_t n, std::int64_t slots, unsigned long long *sums,
                                     unsigned long long *counts) {
  if (n == 0)
    return;
  launch(device_->manager(), kernels_->aggregate, "aggregate",
         aggregateAdvice(keys, first, second, sums, counts), keys, measure, first, second, n, sums,
         counts);
  synchronize();
}

void SimQueryDevice::runFusedStar(const FusedStar &star, std::int32_t n, unsigned long long *sums,
                                  unsigned long long *counts) {
  if (n == 0)
    return;
  launch(device_->manager(), kernels_->fusedStar, "fused star", fusedStarAdvice(star, sums, counts),
         star, n, sums, counts);
  synchronize();
}

} // namespace mqx::ssb::gpu
