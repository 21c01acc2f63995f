// What mqx-vmm-costs prints (bench/results/vmm-costs-*.json): the device, the
// page size and count, and each cost in milliseconds.
#pragma once

#include <cstddef>
#include <string>

#include "../common/json_output.hpp"

namespace mqx::bench {

struct VmmCosts {
  std::string device;
  std::size_t pageMiB = 0;
  std::size_t pages = 0;
  // Seconds per page.
  double hostMapEach = 0;         // map a host block under a device page and set its access
  double hostMapOnly = 0;         // map only (access set once over the run)
  double hostAccessRange = 0;     // one cuMemSetAccess over the run
  double hostMapDuringCopy = 0;   // map and access while a copy runs
  double unmapEachDuringCopy = 0; // unmap while a copy runs
  double mapEach = 0;             // create, map and set access of a device page
  double unmapEach = 0;           // one cuMemUnmap per page
  double releaseEach = 0;
  double unmapRangePerPage = 0; // one cuMemUnmap over the run
  // Seconds in all.
  double copySeconds = 0; // a 1 GiB device-to-host copy
  double unmapDuringCopy = 0;
  double releaseDuringCopy = 0;
  double mapDuringCopy = 0;
  // Each step of a device page's mapping on its own, medians of 9, idle and
  // while a copy runs: which one a reused physical allocation would skip.
  double createIdle = 0;
  double mapCreatedIdle = 0;
  double accessIdle = 0;
  double createDuringCopy = 0;
  double mapCreatedDuringCopy = 0;
  double accessDuringCopy = 0;
  // The same copy issued as one call per 8 MiB and per 2 MiB: whether the
  // access step waits for the copy call in progress.
  double accessDuring8MiBCopies = 0;
  double accessDuring2MiBCopies = 0;
  // Host blocks: the allocation granularity of a HOST_NUMA block (bytes),
  // and the access step alone (median of 9, idle, seconds) of a HOST_NUMA
  // block and of a HOST one: whether the block's kind changes its
  // by-the-byte cost.
  std::size_t hostGranularityMinimum = 0;
  std::size_t hostGranularityRecommended = 0;
  double hostNumaBlockAccess = 0;
  double hostTypeBlockAccess = 0;
};

Json vmmCostsJson(const VmmCosts& costs);

} // namespace mqx::bench
