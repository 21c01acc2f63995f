#include "core/cow_tracker.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
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

// The protection of every host page in [first, last) from /proc/self/maps;
// -1 where nothing is mapped. Read once per protect call that touches pages
// not yet protected: we must restore read-only memory as read-only.
std::vector<int> readProtections(std::uintptr_t first, std::uintptr_t last, std::uintptr_t pageSize) {
  std::vector<int> result((last - first) / pageSize, -1);
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
    for (std::uintptr_t page = std::max<std::uintptr_t>(begin, first); page < std::min<std::uintptr_t>(end, last);
         page += pageSize)
      result[(page - first) / pageSize] = protection;
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
  for (const auto& [address, page] : hostPages_)
    if (page.writeProtected) ::mprotect(reinterpret_cast<void*>(address), hostPageSize(), page.originalProtection);
}

bool CowTracker::protect(const void* source, std::size_t bytes, PageKey owner) {
  TrackerLock lock(mutex_);
  const std::uintptr_t pageSize = hostPageSize();
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  const std::uintptr_t first = start & ~(pageSize - 1);
  const std::uintptr_t last = (start + bytes + pageSize - 1) & ~(pageSize - 1);

  std::vector<int> protections;
  for (std::uintptr_t page = first; page < last; page += pageSize) {
    if (hostPages_.contains(page)) continue;
    if (protections.empty()) protections = readProtections(first, last, pageSize);
    if (protections[(page - first) / pageSize] < 0) return false; // not mapped: let the caller copy
  }
  for (std::uintptr_t page = first; page < last; page += pageSize) {
    auto [it, inserted] = hostPages_.try_emplace(page);
    HostPage& record = it->second;
    if (inserted) {
      record.originalProtection = protections[(page - first) / pageSize];
      record.writeProtected = (record.originalProtection & PROT_WRITE) != 0;
      if (record.writeProtected &&
          ::mprotect(reinterpret_cast<void*>(page), pageSize, record.originalProtection & ~PROT_WRITE) != 0) {
        log(LogLevel::Warn, "copy-on-write: mprotect failed ({}), copying instead", std::strerror(errno));
        hostPages_.erase(it);
        releaseHostPages(first, page); // undo the pages done so far
        return false;
      }
    }
    ++record.references;
  }
  protectedCount_.store(hostPages_.size(), std::memory_order_release);
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
  releaseHostPages(start & ~(pageSize - 1), (start + bytes + pageSize - 1) & ~(pageSize - 1));
  if (records_.empty()) longestRecord_ = 0;
}

void CowTracker::releaseHostPages(std::uintptr_t first, std::uintptr_t last) {
  const std::uintptr_t pageSize = hostPageSize();
  for (std::uintptr_t page = first; page < last; page += pageSize) {
    auto it = hostPages_.find(page);
    if (it == hostPages_.end()) continue;
    if (--it->second.references == 0) {
      if (it->second.writeProtected) ::mprotect(reinterpret_cast<void*>(page), pageSize, it->second.originalProtection);
      hostPages_.erase(it);
    }
  }
  protectedCount_.store(hostPages_.size(), std::memory_order_release);
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
  const std::uintptr_t pageSize = hostPageSize();
  if (holdingTrackerLock) return false;
  TrackerLock lock(mutex_);
  auto it = hostPages_.lower_bound(address & ~(pageSize - 1));
  return it != hostPages_.end() && it->first < address + bytes;
}

std::vector<CowRecord> CowTracker::onHostPage(std::uintptr_t address) const {
  const std::uintptr_t pageSize = hostPageSize();
  return overlapping(address & ~(pageSize - 1), pageSize);
}

} // namespace mqx
