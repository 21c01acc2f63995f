#include "ssb/gpu/cuda_device.hpp"

#include "ssb/gpu/cuda_check.hpp"
#include "ssb/gpu/fused_star.hpp"
#include "ssb/gpu/operators.hpp"

namespace mqx::ssb::gpu {
namespace {

class CudaDevice final : public QueryDevice {
public:
  CudaDevice() {
    int device = 0;
    MQX_SSB_CUDA(cudaGetDevice(&device));
    MQX_SSB_CUDA(cudaFree(nullptr)); // creates the context
    cudaDeviceProp properties{};
    MQX_SSB_CUDA(cudaGetDeviceProperties(&properties, device));
    name_ = properties.name;
  }

  std::string name() const override { return name_; }

  void upload(void *device, const void *host, std::size_t bytes) override {
    MQX_SSB_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void *host, const void *device, std::size_t bytes) override {
    MQX_SSB_CUDA(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  void zero(void *device, std::size_t bytes) override {
    MQX_SSB_CUDA(cudaMemset(device, 0, bytes));
  }
  void synchronize() override { MQX_SSB_CUDA(cudaDeviceSynchronize()); }

  std::int32_t selectRows(const std::int32_t *column, const std::int32_t *selection, std::int32_t n,
                          ValueSet accepted, std::int32_t *out, std::uint32_t *counter) override {
    return gpu::selectRows(column, selection, n, accepted, out, counter);
  }
  void gather(const std::int32_t *source, const std::int32_t *indices, std::int32_t n,
              std::int32_t *out) override {
    gpu::gather(source, indices, n, out);
  }
  void buildHashTable(const std::int32_t *keys, const std::int32_t *payload,
                      const std::int32_t *selection, std::int32_t n,
                      DeviceHashTable table) override {
    gpu::buildHashTable(keys, payload, selection, n, table);
  }
  std::int32_t probeHashTable(const std::int32_t *foreignKeys, const std::int32_t *selection,
                              std::int32_t n, DeviceHashTable table, std::int32_t *rowsOut,
                              std::int32_t *positionsOut, std::int32_t *payloadOut,
                              std::uint32_t *counter) override {
    return gpu::probeHashTable(foreignKeys, selection, n, table, rowsOut, positionsOut, payloadOut,
                               counter);
  }
  void aggregateGroups(GroupKeys keys, DeviceMeasure measure, const std::int32_t *first,
                       const std::int32_t *second, std::int32_t n, std::int64_t slots,
                       unsigned long long *sums, unsigned long long *counts) override {
    gpu::aggregateGroups(keys, measure, first, second, n, slots, sums, counts);
  }
  void runFusedStar(const FusedStar &star, std::int32_t n, unsigned long long *sums,
                    unsigned long long *counts) override {
    gpu::runFusedStar(star, n, sums, counts);
  }

protected:
  void *allocateBytes(std::size_t bytes) override {
    void *buffer = nullptr;
    MQX_SSB_CUDA(cudaMalloc(&buffer, bytes));
    return buffer;
  }
  void freeBytes(void *buffer) noexcept override { MQX_SSB_CUDA(cudaFree(buffer)); }

private:
  std::string name_;
};

} // namespace

bool cudaDevicePresent() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<QueryDevice> openCudaDevice() { return std::make_unique<CudaDevice>(); }

} // namespace mqx::ssb::gpu
