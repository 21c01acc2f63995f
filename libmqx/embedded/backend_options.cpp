#include "embedded/backend_options.hpp"

namespace mqx::embedded {

device::SimBackendOptions simBackendOptions(const Config& config) {
  device::SimBackendOptions options;
  options.capacity = config.simCapacity;
  options.granularity = config.simGranularity;
  options.copyBandwidthGBps = config.simCopyBandwidthGBps;
  options.deviceBandwidthGBps = config.simDeviceBandwidthGBps;
  options.realtime = config.simRealtime;
  return options;
}

} // namespace mqx::embedded
