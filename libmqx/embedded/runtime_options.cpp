#include "embedded/runtime_options.hpp"

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

ipc::NodeOptions nodeOptions(const Config& config) {
  ipc::NodeOptions options;
  options.instance = config.daemonInstance;
  options.evictionTimeoutMilliseconds = config.evictionTimeoutMilliseconds;
  return options;
}

ipc::AdmissionOptions admissionOptions(const Config& config) {
  ipc::AdmissionOptions options;
  options.admission = config.admission;
  options.admissionFixN = config.admissionFixN;
  options.demandReportIntervalMilliseconds = config.demandReportIntervalMilliseconds;
  return options;
}

} // namespace mqx::embedded
