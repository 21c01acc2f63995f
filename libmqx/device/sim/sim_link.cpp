#include "device/sim/sim_link.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/log.hpp"

namespace mqx::device {
namespace {

std::uint64_t monotonicNow() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(now.tv_nsec);
}

} // namespace

std::string simLinkObjectName(const std::string& name, unsigned uid) {
  std::string safe;
  for (char c : name)
    safe += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_') ? c : '_';
  return "/mqx-" + std::to_string(uid) + "-simlink-" + safe;
}

std::unique_ptr<SimLink> SimLink::open(const std::string& name) {
  const std::string object = simLinkObjectName(name, getuid());
  const int file = shm_open(object.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (file < 0) {
    log(LogLevel::Warn, "sim: cannot open the shared link {} ({}): copies are charged per process", object,
        std::strerror(errno));
    return nullptr;
  }
  // Zero-filled by ftruncate: a fresh link is free. Growing an object another
  // process sized already changes nothing.
  struct stat status {};
  if (fstat(file, &status) != 0 ||
      (static_cast<std::size_t>(status.st_size) < sizeof(Shared) && ftruncate(file, sizeof(Shared)) != 0)) {
    log(LogLevel::Warn, "sim: cannot size the shared link {} ({}): copies are charged per process", object,
        std::strerror(errno));
    ::close(file);
    return nullptr;
  }
  void* mapped = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
  ::close(file);
  if (mapped == MAP_FAILED) {
    log(LogLevel::Warn, "sim: cannot map the shared link {} ({}): copies are charged per process", object,
        std::strerror(errno));
    return nullptr;
  }
  return std::unique_ptr<SimLink>(new SimLink(static_cast<Shared*>(mapped), object));
}

SimLink::~SimLink() { munmap(shared_, sizeof(Shared)); }

std::uint64_t SimLink::reservationEnd(std::uint64_t busyUntil, std::uint64_t nowNanoseconds, double seconds) {
  const auto duration = static_cast<std::uint64_t>(std::max(0.0, seconds) * 1e9);
  return std::max(busyUntil, nowNanoseconds) + duration;
}

void SimLink::transfer(Direction direction, double seconds) {
  std::atomic<std::uint64_t>& busy = shared_->busyUntil[static_cast<unsigned>(direction)];
  std::uint64_t seen = busy.load();
  std::uint64_t end = 0;
  do {
    end = reservationEnd(seen, monotonicNow(), seconds);
  } while (!busy.compare_exchange_weak(seen, end));
  timespec until{static_cast<time_t>(end / 1'000'000'000ull), static_cast<long>(end % 1'000'000'000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
}

} // namespace mqx::device
