#include "core/region_directory.hpp"

#include <algorithm>
#include <cstring>

namespace mqx {

std::size_t Region::backedBytes() const {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < pages.size(); ++i)
    if (pages[i].backed()) bytes += pageMappedBytes(i);
  return bytes;
}

std::size_t Region::dirtyBytes() const {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < pages.size(); ++i)
    if (pages[i].dirty()) bytes += pageDataBytes(i);
  return bytes;
}

Region& RegionDirectory::add(std::unique_ptr<Region> region) {
  lowest_ = lowest_ == 0 ? region->base : std::min(lowest_, region->base);
  highest_ = std::max(highest_, region->base + region->size);
  Region& added = *region;
  totalBytes_ += added.size;
  byId_[added.id] = &added;
  byBase_[added.base] = std::move(region);
  return added;
}

void RegionDirectory::remove(RegionId id) {
  auto it = byId_.find(id);
  if (it == byId_.end()) return;
  totalBytes_ -= it->second->size;
  DevicePtr base = it->second->base;
  byId_.erase(it);
  byBase_.erase(base);
}

Region* RegionDirectory::find(DevicePtr address) {
  auto it = byBase_.upper_bound(address);
  if (it == byBase_.begin()) return nullptr;
  --it;
  return it->second->contains(address) ? it->second.get() : nullptr;
}

bool RegionDirectory::overlaps(DevicePtr base, std::size_t bytes) const {
  auto it = byBase_.lower_bound(base);
  if (it != byBase_.end() && it->first < base + bytes) return true;
  if (it == byBase_.begin()) return false;
  --it;
  return it->first + it->second->reservedSize > base;
}

const Region* RegionDirectory::find(DevicePtr address) const {
  return const_cast<RegionDirectory*>(this)->find(address);
}

Region* RegionDirectory::byId(RegionId id) {
  auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : it->second;
}

Region* RegionDirectory::byBase(DevicePtr address) {
  auto it = byBase_.find(address);
  return it == byBase_.end() ? nullptr : it->second.get();
}

// A copy of at most this many bytes into managed memory is scanned for
// addresses of managed regions, one range check per 8-byte word. Tables of
// device pointers (batched BLAS, gathers) are small; bulk data is not scanned.
constexpr std::size_t kPointerTableScanBytes = std::size_t{1} << 20;

void RegionDirectory::notePointers(Region& table, const std::byte* bytes, std::size_t count) const {
  if (count > kPointerTableScanBytes) return;
  for (std::size_t offset = 0; offset + sizeof(DevicePtr) <= count; offset += sizeof(DevicePtr)) {
    DevicePtr value;
    std::memcpy(&value, bytes + offset, sizeof value);
    if (!mayContain(value)) continue;
    const Region* target = find(value);
    if (target != nullptr && target != &table &&
        std::find(table.pointsTo.begin(), table.pointsTo.end(), target->id) == table.pointsTo.end())
      table.pointsTo.push_back(target->id);
  }
}

} // namespace mqx
