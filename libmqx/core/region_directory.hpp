// RegionDirectory: the regions of one process, found by any address inside
// them (kernel parameters carry interior pointers) or by id.
#pragma once

#include <map>
#include <memory>
#include <unordered_map>

#include "core/region.hpp"

namespace mqx {

class RegionDirectory {
public:
  Region& add(std::unique_ptr<Region> region);
  void remove(RegionId id);

  // The region containing `address` (inside its requested size), or null.
  Region* find(DevicePtr address);
  const Region* find(DevicePtr address) const;
  Region* byId(RegionId id);
  // The region starting exactly at `address`, or null.
  Region* byBase(DevicePtr address);
  // Whether some region's reserved range meets [base, base + bytes).
  bool overlaps(DevicePtr base, std::size_t bytes) const;

  // Whether `address` may lie in a region: one comparison against the span
  // of all regions, the cheap first test of a pointer-table scan.
  bool mayContain(DevicePtr address) const { return address >= lowest_ && address < highest_; }
  // Pointer tables (docs/architecture.md): adds to `table` the regions whose
  // addresses the `count` bytes copied into it hold.
  void notePointers(Region& table, const std::byte* bytes, std::size_t count) const;

  template <typename Function> void forEach(Function&& function) {
    for (auto& [base, region] : byBase_)
      function(*region);
  }
  std::size_t count() const { return byBase_.size(); }
  std::size_t totalBytes() const { return totalBytes_; }

private:
  std::map<DevicePtr, std::unique_ptr<Region>> byBase_;
  std::unordered_map<RegionId, Region*> byId_;
  std::size_t totalBytes_ = 0;
  DevicePtr lowest_ = 0, highest_ = 0; // the span of all regions (grows only)
};

} // namespace mqx
