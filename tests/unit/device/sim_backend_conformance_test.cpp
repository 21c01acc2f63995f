// The DeviceBackend conformance suite (backend_conformance.hpp) on the
// simulated device: 64 MiB of 2 MiB granules, as fast as it goes.
#include "backend_conformance.hpp"
#include "device/sim/sim_backend.hpp"

namespace mqx::device::conformance {
namespace {

BackendMaker simMaker() {
  return {"Sim", [](std::string*) -> std::unique_ptr<DeviceBackend> {
            SimBackendOptions options;
            options.capacity = std::size_t{64} << 20;
            return std::make_unique<SimBackend>(options);
          }};
}

INSTANTIATE_TEST_SUITE_P(Sim, BackendConformance, ::testing::Values(simMaker()), backendName);

} // namespace
} // namespace mqx::device::conformance
