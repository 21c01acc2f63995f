// ReferenceFinder: which regions a kernel launch touches, and how
// (docs/architecture.md decision 6, paper §4.1 "data reference and access
// advices"). Advice given by the launching thread wins; otherwise the
// launch's parameter bytes are scanned for values that point anywhere inside
// a managed region (interior pointers and pointers inside struct parameters
// included); where the parameter layout is unknown, every region counts.
#pragma once

#include <map>
#include <thread>
#include <vector>

#include "core/manager_options.hpp"
#include "core/region_directory.hpp"
#include "device/device_backend.hpp"

namespace mqx {

struct RegionReference {
  Region* region = nullptr;
  Access access = Access::Both;
};

class ReferenceFinder {
public:
  ReferenceFinder(const ReferenceOptions& options, device::DeviceBackend& backend, RegionDirectory& directory)
      : options_(options), backend_(backend), directory_(directory) {}

  // Records advice of the calling thread for its next launch.
  void advise(RegionId region, Access access);
  // Forgets advice naming a region that is being freed.
  void forget(RegionId region);

  // The references of `launch`, one per region; consumes the calling
  // thread's advice. InvalidHandle when the kernel is unknown to the device.
  // `complete` says whether they are all the kernel can touch: advice, every
  // region, or a parameter scan where the program passes every pointer as a
  // parameter (optimizations.pointers_in_parameters). A kernel may otherwise
  // reach memory through pointers stored in device memory.
  Status find(const device::KernelLaunch& launch, std::vector<RegionReference>* references, bool* complete = nullptr);

private:
  std::vector<RegionReference> fromAdvice(const std::vector<std::pair<RegionId, Access>>& advice);
  Status fromParameters(const device::KernelLaunch& launch, std::vector<RegionReference>* result);
  std::vector<RegionReference> allRegions();

  const ReferenceOptions options_;
  device::DeviceBackend& backend_;
  RegionDirectory& directory_;
  std::map<std::thread::id, std::vector<std::pair<RegionId, Access>>> advice_;
  std::map<FunctionHandle, std::vector<device::ParamInfo>> layouts_;
  std::vector<RegionReference> found_; // find()'s scratch, before merging
};

} // namespace mqx
