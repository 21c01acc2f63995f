#include "vmm_costs_report.hpp"

namespace mqx::bench {
namespace {

// `seconds` as milliseconds, to `decimals` places.
double milliseconds(double seconds, int decimals) { return rounded(seconds * 1e3, decimals); }

} // namespace

Json vmmCostsJson(const VmmCosts& costs) {
  return {
      {"device", costs.device},
      {"page_MiB", costs.pageMiB},
      {"pages", costs.pages},
      {"host_block_map_access_ms_per_page", milliseconds(costs.hostMapEach, 4)},
      {"host_block_map_only_ms_per_page", milliseconds(costs.hostMapOnly, 4)},
      {"host_block_access_over_range_ms_per_page", milliseconds(costs.hostAccessRange, 4)},
      {"host_block_map_access_during_copy_ms_per_page", milliseconds(costs.hostMapDuringCopy, 4)},
      {"unmap_during_copy_ms_per_page_of_" + std::to_string(costs.pages), milliseconds(costs.unmapEachDuringCopy, 4)},
      {"map_create_access_ms_per_page", milliseconds(costs.mapEach, 4)},
      {"unmap_ms_per_page_one_call_each", milliseconds(costs.unmapEach, 4)},
      {"release_ms_per_page", milliseconds(costs.releaseEach, 4)},
      {"unmap_ms_per_page_one_call_over_range", milliseconds(costs.unmapRangePerPage, 4)},
      {"d2h_1GiB_copy_ms", milliseconds(costs.copySeconds, 3)},
      {"unmap_during_copy_ms", milliseconds(costs.unmapDuringCopy, 3)},
      {"release_during_copy_ms", milliseconds(costs.releaseDuringCopy, 3)},
      {"map_during_copy_ms", milliseconds(costs.mapDuringCopy, 3)},
      {"create_ms", milliseconds(costs.createIdle, 4)},
      {"map_created_ms", milliseconds(costs.mapCreatedIdle, 4)},
      {"access_ms", milliseconds(costs.accessIdle, 4)},
      {"create_during_copy_ms", milliseconds(costs.createDuringCopy, 4)},
      {"map_created_during_copy_ms", milliseconds(costs.mapCreatedDuringCopy, 4)},
      {"access_during_copy_ms", milliseconds(costs.accessDuringCopy, 4)},
      {"access_during_8MiB_copies_ms", milliseconds(costs.accessDuring8MiBCopies, 4)},
      {"access_during_2MiB_copies_ms", milliseconds(costs.accessDuring2MiBCopies, 4)},
      {"host_granularity_minimum_bytes", costs.hostGranularityMinimum},
      {"host_granularity_recommended_bytes", costs.hostGranularityRecommended},
      {"host_numa_block_access_ms", milliseconds(costs.hostNumaBlockAccess, 4)},
      {"host_type_block_access_ms", milliseconds(costs.hostTypeBlockAccess, 4)},
  };
}

} // namespace mqx::bench
