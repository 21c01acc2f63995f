#include "mix_bench_report.hpp"

namespace mqx::bench {
namespace {

Json geometry(const MixLaunch& launch) { return Json::array({launch.grid, launch.block}); }

Json mixJson(const MixResult& mix) {
  Json kernels = Json::array();
  for (const MixKernel& kernel : mix.kernels)
    kernels.push_back({{"query", kernel.query},
                       {"phase", kernel.phase},
                       {"elements", kernel.elements},
                       {"default", geometry(kernel.defaults)},
                       {"optimised", geometry(kernel.optimised)}});
  return {{"name", mix.name},
          {"optimizer", mix.optimizer},
          {"kernels", std::move(kernels)},
          {"sequential_ms", rounded(mix.sequential, 5)},
          {"streams_default_ms", rounded(mix.streamsDefault, 5)},
          {"streams_optimised_ms", rounded(mix.streamsOptimised, 5)},
          {"speedup_vs_sequential", rounded(mix.sequential / mix.streamsOptimised, 3)},
          {"speedup_vs_streams", rounded(mix.streamsDefault / mix.streamsOptimised, 3)}};
}

} // namespace

Json mixBenchJson(const MixBenchRun& run) {
  Json mixes = Json::array();
  for (const MixResult& mix : run.mixes)
    mixes.push_back(mixJson(mix));
  return {{"device", run.device},
          {"commit", run.commit},
          {"repeats", run.repeats},
          {"mixes", std::move(mixes)},
          {"results_equal", run.resultsEqual}};
}

} // namespace mqx::bench
