#include "core/reference_finder.hpp"

#include <algorithm>
#include <cstring>

#include "common/log.hpp"

namespace mqx {
namespace {

// Merges duplicate regions into `out`, combining their access. Launches name
// a few regions: a linear pass beats a map's allocations on this hot path,
// and `out` keeps its capacity from launch to launch.
void mergeInto(const std::vector<RegionReference>& references, std::vector<RegionReference>* out) {
  std::vector<RegionReference>& result = *out;
  result.clear();
  for (const auto& reference : references) {
    auto same = std::find_if(result.begin(), result.end(),
                             [&](const RegionReference& r) { return r.region == reference.region; });
    if (same == result.end())
      result.push_back(reference);
    else
      same->access = same->access | reference.access;
  }
}

} // namespace

void ReferenceFinder::advise(RegionId region, Access access) {
  advice_[std::this_thread::get_id()].emplace_back(region, access);
}

void ReferenceFinder::forget(RegionId region) {
  for (auto& [thread, entries] : advice_)
    std::erase_if(entries, [&](const auto& entry) { return entry.first == region; });
}

Status ReferenceFinder::find(const device::KernelLaunch& launch, std::vector<RegionReference>* references,
                             bool* complete) {
  std::vector<std::pair<RegionId, Access>> advice;
  if (auto it = advice_.find(std::this_thread::get_id()); it != advice_.end()) {
    advice = std::move(it->second);
    advice_.erase(it);
  }
  std::vector<RegionReference>& result = found_; // reused: no allocation per launch
  result.clear();
  const ReferenceDetection mode = options_.detection;
  // All (the paper's NoRef) finds references like Auto; the manager then adds
  // every resident region.
  bool knownAll = true;
  if (!advice.empty() && mode != ReferenceDetection::Scan) {
    result = fromAdvice(advice);
  } else if (mode == ReferenceDetection::Advice) {
    // Advice mode without advice: nothing tells us what the kernel touches.
    result = allRegions();
  } else {
    Status status = fromParameters(launch, &result);
    if (status == Status::InvalidHandle) return status;
    if (!ok(status))
      result = allRegions(); // layout unknown: every region may be touched
    else
      knownAll = options_.pointersInParameters;
  }
  if (complete != nullptr) *complete = knownAll;
  if (!options_.accessAdvice)
    for (auto& reference : result)
      reference.access = Access::Both; // the paper's NoAccess variant
  mergeInto(result, references);
  return Status::Success;
}

std::vector<RegionReference> ReferenceFinder::fromAdvice(const std::vector<std::pair<RegionId, Access>>& advice) {
  std::vector<RegionReference> result;
  for (const auto& [id, access] : advice)
    if (Region* region = directory_.byId(id)) result.push_back({region, access});
  return result;
}

Status ReferenceFinder::fromParameters(const device::KernelLaunch& launch, std::vector<RegionReference>* out) {
  auto it = layouts_.find(launch.function);
  if (it == layouts_.end()) {
    std::vector<device::ParamInfo> layout;
    MQX_TRY(backend_.paramLayout(launch.function, &layout));
    it = layouts_.emplace(launch.function, std::move(layout)).first;
  }
  std::vector<RegionReference>& result = *out;
  if (launch.params == nullptr) return Status::Success;
  const auto& layout = it->second;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const auto* bytes = static_cast<const std::byte*>(launch.params[i]);
    if (bytes == nullptr) continue;
    // Pointers are 8-byte aligned inside their parameter, struct members too.
    for (std::size_t offset = 0; offset + sizeof(DevicePtr) <= layout[i].size; offset += sizeof(DevicePtr)) {
      DevicePtr value;
      std::memcpy(&value, bytes + offset, sizeof value);
      if (Region* region = directory_.find(value)) result.push_back({region, Access::Both});
    }
  }
  return Status::Success;
}

std::vector<RegionReference> ReferenceFinder::allRegions() {
  std::vector<RegionReference> result;
  directory_.forEach([&](Region& region) { result.push_back({&region, Access::Both}); });
  return result;
}

} // namespace mqx
