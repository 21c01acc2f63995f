#include "embedded/runtime_options.hpp"

namespace mqx::embedded {

ManagerOptions managerOptions(const Config& config) {
  ManagerOptions options;
  options.pageSize = config.pageSize;
  options.deviceMemoryLimit = config.deviceMemoryLimit;
  options.swapBufferLimit = config.swapBufferLimit;
  options.pinnedSwap = config.pinnedSwap;
  options.borrowHostBlocks = config.borrowHostBlocks;
  options.reportedOversubscription = config.reportedOversubscription;
  options.lazyTransfer = config.lazyTransfer;
  options.copyOnWrite = config.copyOnWrite;
  options.cowMinBytes = config.cowMinBytes;
  options.pageCoherence = config.pageCoherence;
  options.references.detection = config.referenceDetection;
  options.references.accessAdvice = config.accessAdvice;
  options.references.pointersInParameters = config.pointersInParameters;
  options.residency.evictionGranularity = config.evictionGranularity;
  options.residency.evictionTimeoutMilliseconds = config.evictionTimeoutMilliseconds;
  options.residency.writeBackAheadFraction = config.writeBackAhead;
  options.residency.writeBackAheadQuietOperations = config.writeBackAheadQuietOperations;
  options.residency.sparePages = config.sparePages;
  options.residency.stagedWriteBack = config.stagedWriteBack;
  options.policy.replacement = config.replacement;
  options.policy.latencyFactor = config.latencyFactor;
  options.policy.randomSeed = config.randomSeed;
  options.trace.file = config.traceFile;
  options.trace.bufferEvents = config.traceBufferEvents;
  return options;
}

device::SimBackendOptions simBackendOptions(const Config& config) {
  device::SimBackendOptions options;
  options.capacity = config.simCapacity;
  options.granularity = config.simGranularity;
  options.copyBandwidthGBps = config.simCopyBandwidthGBps;
  options.deviceBandwidthGBps = config.simDeviceBandwidthGBps;
  options.realtime = config.simRealtime;
  options.linkName = config.simLinkName;
  options.mapCostMicroseconds = config.simMapCostMicroseconds;
  return options;
}

ipc::NodeOptions nodeOptions(const Config& config) {
  ipc::NodeOptions options;
  options.instance = config.daemonInstance;
  options.evictionTimeoutMilliseconds = config.evictionTimeoutMilliseconds;
  return options;
}

ipc::NodeOptions simNodeOptions(const Config& config) {
  ipc::NodeOptions options = nodeOptions(config);
  options.device = config.simDevice;
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
