// The device backends' options as the configuration states them. Backends
// take their own options, not the whole Config (STYLE.md section 3, as
// CudaBackendOptions): they are built here, once, for every place that
// assembles a runtime on the simulated device (SimDevice, and the test and
// benchmark programs that assemble their own).
#pragma once

#include "config/config.hpp"
#include "device/sim/sim_backend.hpp"

namespace mqx::embedded {

// The [sim] section: capacity, granularity, bandwidths, realtime.
device::SimBackendOptions simBackendOptions(const Config& config);

} // namespace mqx::embedded
