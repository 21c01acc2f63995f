// bench/gpu/vmm_costs_report: what mqx-vmm-costs prints.
#include "vmm_costs_report.hpp"

#include <gtest/gtest.h>

#include "awkward_text.hpp"

namespace mqx::bench {
namespace {

TEST(VmmCostsReport, EveryFieldParsesBackInMilliseconds) {
  VmmCosts costs;
  costs.device = "NVIDIA H100 " + test::kAwkwardText;
  costs.pageMiB = 8;
  costs.pages = 64;
  costs.hostMapEach = 0.0000348123;
  costs.hostMapOnly = 0.00001;
  costs.hostAccessRange = 0.00002;
  costs.hostMapDuringCopy = 0.00003;
  costs.unmapEachDuringCopy = 0.00004;
  costs.mapEach = 0.00005;
  costs.unmapEach = 0.0000165;
  costs.releaseEach = 0.0000125;
  costs.unmapRangePerPage = 0.0000157;
  costs.copySeconds = 0.0194904999;
  costs.unmapDuringCopy = 0.000161;
  costs.releaseDuringCopy = 0.000114;
  costs.mapDuringCopy = 0.001075;
  costs.createIdle = 0.0000201;
  costs.mapCreatedIdle = 0.0000032;
  costs.accessIdle = 0.0000113;
  costs.createDuringCopy = 0.0007006;
  costs.mapCreatedDuringCopy = 0.0000041;
  costs.accessDuringCopy = 0.0003502;
  costs.accessDuring8MiBCopies = 0.0001503;
  costs.accessDuring2MiBCopies = 0.0000504;
  costs.hostGranularityMinimum = 4096;
  costs.hostGranularityRecommended = 2u << 20;
  costs.hostNumaBlockAccess = 0.00074051;
  costs.hostTypeBlockAccess = 0.0000302;
  const Json parsed = Json::parse(jsonText(vmmCostsJson(costs)));
  EXPECT_EQ(parsed.size(), 28u);
  EXPECT_EQ(parsed["device"], costs.device);
  EXPECT_EQ(parsed["page_MiB"], 8);
  EXPECT_EQ(parsed["pages"], 64);
  EXPECT_EQ(parsed["host_block_map_access_ms_per_page"], 0.0348);
  EXPECT_EQ(parsed["host_block_map_only_ms_per_page"], 0.01);
  EXPECT_EQ(parsed["host_block_access_over_range_ms_per_page"], 0.02);
  EXPECT_EQ(parsed["host_block_map_access_during_copy_ms_per_page"], 0.03);
  EXPECT_EQ(parsed["unmap_during_copy_ms_per_page_of_64"], 0.04);
  EXPECT_EQ(parsed["map_create_access_ms_per_page"], 0.05);
  EXPECT_EQ(parsed["unmap_ms_per_page_one_call_each"], 0.0165);
  EXPECT_EQ(parsed["release_ms_per_page"], 0.0125);
  EXPECT_EQ(parsed["unmap_ms_per_page_one_call_over_range"], 0.0157);
  EXPECT_EQ(parsed["d2h_1GiB_copy_ms"], 19.49);
  EXPECT_EQ(parsed["unmap_during_copy_ms"], 0.161);
  EXPECT_EQ(parsed["release_during_copy_ms"], 0.114);
  EXPECT_EQ(parsed["map_during_copy_ms"], 1.075);
  EXPECT_EQ(parsed["create_ms"], 0.0201);
  EXPECT_EQ(parsed["map_created_ms"], 0.0032);
  EXPECT_EQ(parsed["access_ms"], 0.0113);
  EXPECT_EQ(parsed["create_during_copy_ms"], 0.7006);
  EXPECT_EQ(parsed["map_created_during_copy_ms"], 0.0041);
  EXPECT_EQ(parsed["access_during_copy_ms"], 0.3502);
  EXPECT_EQ(parsed["access_during_8MiB_copies_ms"], 0.1503);
  EXPECT_EQ(parsed["access_during_2MiB_copies_ms"], 0.0504);
  EXPECT_EQ(parsed["host_granularity_minimum_bytes"], 4096);
  EXPECT_EQ(parsed["host_granularity_recommended_bytes"], 2 << 20);
  EXPECT_EQ(parsed["host_numa_block_access_ms"], 0.7405);
  EXPECT_EQ(parsed["host_type_block_access_ms"], 0.0302);
}

} // namespace
} // namespace mqx::bench
