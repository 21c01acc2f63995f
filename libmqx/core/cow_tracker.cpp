#include "core/cow_tracker.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.hpp"

namespace mqx {
namespace {

// Set while this thread holds a tracker's lock: memory the tracker itself
// frees then is never protected, and free() must not take the lock again.
thread_local bool holdingTrackerLock = false;

struct TrackerLock {
  explicit TrackerLock(std::mutex& mutex) : guard(mutex) { holdingTrackerLock = true; }
  ~TrackerLock() { holdingTrackerLock = false; }
  std::lock_guard<std::mutex> guard;
};

struct Mapping {
  std::uintptr_t begin, end;
  int protection;
};

// The mappings that overlap [first, last), from /proc/self/maps: we must
// restore read-only memory as read-only. Read once per protect call that
// finds unprotected pages.
std::vector<Mapping> readMappings(std::uintptr_t first, std::uintptr_t last) {
  std::vector<Mapping> result;
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return result;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long begin = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &begin, &end, perms) != 3) continue;
    if (end <= first || begin >= last) continue;
    int protection =
        (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
    result.push_back({std::max<std::uintptr_t>(begin, first), std::min<std::uintptr_t>(end, last), protection});
  }
  std::fclose(maps);
  return result;
}

} // namespace

std::uintptr_t CowTracker::hostPageSize() {
  static const auto size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

CowTracker::~CowTracker() {
  for (const auto& [start, segment] : segments_)
    if (segment.writeProtected)
      ::mprotect(reinterpret_cast<void*>(start), segment.end - start, segment.originalProtection);
}

void CowTracker::split(std::uintptr_t at) {
  auto it = segments_.upper_bound(at);
  if (it == segments_.begin()) return;
  --it;
  if (it->first == at || it->second.end <= at) return;
  Segment tail = it->second;
  it->second.end = at;
  segments_.emplace(at, tail);
}

bool CowTracker::reference(std::uintptr_t first, std::uintptr_t last) {
  split(first);
  split(last);
  // The gaps between existing segments are newly protected.
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> gaps;
  std::uintptr_t cursor = first;
  for (auto it = segments_.lower_bound(first); it != segments_.end() && it->first < last; ++it) {
    if (it->first > cursor) gaps.emplace_back(cursor, it->first);
    cursor = it->second.end;
  }
  if (cursor < last) gaps.emplace_back(cursor, last);

  // Lingering segments were protected by us earlier; if the memory was
  // unmapped and mapped again behind our back, it is writable now.
  std::vector<std::uintptr_t> lingering;
  for (auto it = segments_.lower_bound(first); it != segments_.end() && it->first < last; ++it)
    if (it->second.references == 0 && it->second.writeProtected) lingering.push_back(it->first);

  std::vector<Mapping> runs;
  if (!gaps.empty() || !lingering.empty()) {
    const auto mappings = readMappings(first, last);
    for (std::uintptr_t start : lingering) {
      Segment& segment = segments_.at(start);
      for (const Mapping& mapping : mappings) {
        if (mapping.end <= start || mapping.begin >= segment.end || (mapping.protection & PROT_WRITE) == 0) continue;
        ::mprotect(reinterpret_cast<void*>(start), segment.end - start, mapping.protection & ~PROT_WRITE);
        segment.originalProtection = mapping.protection;
        break;
      }
    }
    for (const auto& [begin, end] : gaps) {
      std::uintptr_t covered = begin;
      for (const Mapping& mapping : mappings) {
        if (mapping.end <= begin || mapping.begin >= end) continue;
        if (mapping.begin > covered) return false; // a hole: not our memory to protect
        runs.push_back({std::max(mapping.begin, begin), std::min(mapping.end, end), mapping.protection});
        covered = std::min(mapping.end, end);
      }
      if (covered < end) return false;
    }
  }
  for (const Mapping& run : runs) {
    Segment segment{run.end, 0, run.protection, (run.protection & PROT_WRITE) != 0};
    if (segment.writeProtected &&
        ::mprotect(reinterpret_cast<void*>(run.begin), run.end - run.begin, run.protection & ~PROT_WRITE) != 0) {
      log(LogLevel::Warn, "copy-on-write: mprotect failed ({}), copying instead", std::strerror(errno));
      for (const Mapping& done : runs) {
        if (done.begin == run.begin) break;
        if ((done.protection & PROT_WRITE) != 0)
          ::mprotect(reinterpret_cast<void*>(done.begin), done.end - done.begin, done.protection);
        segments_.erase(done.begin);
      }
      return false;
    }
    segments_.emplace(run.begin, segment);
  }
  for (auto it = segments_.lower_bound(first); it != segments_.end() && it->first < last; ++it)
    ++it->second.references;
  protectedCount_.store(segments_.size(), std::memory_order_release);
  return true;
}

void CowTracker::dereference(std::uintptr_t first, std::uintptr_t last) {
  split(first);
  split(last);
  for (auto it = segments_.lower_bound(first); it != segments_.end() && it->first < last; ++it)
    if (it->second.references != 0) --it->second.references; // at zero the segment lingers
  protectedCount_.store(segments_.size(), std::memory_order_release);
}

void CowTracker::restore(std::map<std::uintptr_t, Segment>::iterator segment) {
  if (segment->second.writeProtected)
    ::mprotect(reinterpret_cast<void*>(segment->first), segment->second.end - segment->first,
               segment->second.originalProtection);
  segments_.erase(segment);
}

bool CowTracker::releaseLingering(std::uintptr_t address) {
  TrackerLock lock(mutex_);
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return false;
  --it;
  if (it->second.end <= address || it->second.references != 0) return false;
  restore(it);
  protectedCount_.store(segments_.size(), std::memory_order_release);
  return true;
}

void CowTracker::releaseLingering(std::uintptr_t address, std::size_t bytes) {
  TrackerLock lock(mutex_);
  auto it = segments_.upper_bound(address);
  if (it != segments_.begin() && std::prev(it)->second.end > address) --it;
  while (it != segments_.end() && it->first < address + bytes) {
    auto next = std::next(it);
    if (it->second.references == 0) restore(it);
    it = next;
  }
  protectedCount_.store(segments_.size(), std::memory_order_release);
}

bool CowTracker::protect(const void* source, std::size_t bytes, PageKey owner) {
  TrackerLock lock(mutex_);
  const std::uintptr_t pageSize = hostPageSize();
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  if (!reference(start & ~(pageSize - 1), (start + bytes + pageSize - 1) & ~(pageSize - 1))) return false;
  records_.emplace(start, CowRecord{start, bytes, owner});
  longestRecord_ = std::max(longestRecord_, bytes);
  return true;
}

void CowTracker::unprotect(const void* source, std::size_t bytes, PageKey owner) {
  TrackerLock lock(mutex_);
  const std::uintptr_t pageSize = hostPageSize();
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  auto [begin, end] = records_.equal_range(start);
  for (auto it = begin; it != end; ++it) {
    if (it->second.owner == owner && it->second.bytes == bytes) {
      records_.erase(it);
      break;
    }
  }
  dereference(start & ~(pageSize - 1), (start + bytes + pageSize - 1) & ~(pageSize - 1));
  if (records_.empty()) longestRecord_ = 0;
}

std::vector<CowRecord> CowTracker::overlapping(std::uintptr_t address, std::size_t bytes) const {
  TrackerLock lock(mutex_);
  std::vector<CowRecord> result;
  const std::uintptr_t lowest = address > longestRecord_ ? address - longestRecord_ : 0;
  for (auto it = records_.lower_bound(lowest); it != records_.end() && it->first < address + bytes; ++it) {
    const CowRecord& record = it->second;
    if (record.start + record.bytes > address) result.push_back(record);
  }
  return result;
}

bool CowTracker::overlapsProtected(std::uintptr_t address, std::size_t bytes) const {
  if (holdingTrackerLock) return false;
  TrackerLock lock(mutex_);
  auto it = segments_.upper_bound(address);
  if (it != segments_.begin() && std::prev(it)->second.end > address) return true;
  return it != segments_.end() && it->first < address + bytes;
}

std::vector<CowRecord> CowTracker::onHostPage(std::uintptr_t address) const {
  const std::uintptr_t pageSize = hostPageSize();
  return overlapping(address & ~(pageSize - 1), pageSize);
}

} // namespace mqx
