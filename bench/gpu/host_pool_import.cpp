// bench/gpu/host_pool_import.cpp: can a node daemon pin host memory ahead of time and lend it
// to client processes as file descriptors? Creating a pinned host block (cuMemCreate,
// HOST_NUMA) runs at ~2.7-3.9 GB/s (mqx-host-block-growth), which is what a client pays today
// to grow its swap buffer. If importing, mapping and opening an already pinned block is much
// faster (~20 GB/s), a daemon-held pool makes that growth cheap.
//
// The lender (this process) creates N pinned 64 MiB host blocks exportable as POSIX fds and
// times create, export, map, access, its CPU fill and copy bandwidth. It then spawns itself as
// the client with the fds inherited (exec, so that the client starts without a CUDA context).
// The client times import, map and access per block (the lend rate), its CPU first touch, copy
// bandwidth through the imported view, unmap and release, and checks that it sees the lender's
// bytes; the lender then checks that it sees the client's. Build and run:
//   build/bench/gpu/mqx-host-pool-import [--blocks N]   (N blocks of 64 MiB, default 32)
#include <cuda.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_context.hpp"

extern char** environ;

namespace {

constexpr std::size_t kBlockBytes = 64ull << 20;
constexpr std::size_t kWords = kBlockBytes / sizeof(std::uint64_t);
constexpr std::size_t kEdgeWords = 4096 / sizeof(std::uint64_t); // the client's CPU check: first and last 4 KiB
constexpr unsigned char kClientByte = 0xa5;                      // what the client's memset leaves behind
constexpr auto kClientTimeout = std::chrono::seconds(120);

const char* role = "lender"; // prefixes every line: which process printed it

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::printf("%s: %s failed: %s\n", role, call, name != nullptr ? name : "unknown error");
  std::exit(1);
}
#define CHECK(call) check((call), #call)

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// One step's cost over the blocks: mean and slowest per block, and the rate in GB/s.
struct Timing {
  double totalMs = 0, maxMs = 0;
  std::size_t count = 0;
  void add(double ms) { totalMs += ms, maxMs = std::max(maxMs, ms), ++count; }
  double meanMs() const { return count != 0 ? totalMs / count : 0; }
  double gbps() const { return totalMs > 0 ? kBlockBytes * count / (totalMs / 1e3) / 1e9 : 0; }
};

void report(const char* what, const Timing& timing) {
  std::printf("%s %s: %.3f ms per 64 MiB (%.1f GB/s), slowest %.3f ms\n", role, what, timing.meanMs(), timing.gbps(),
              timing.maxMs);
}

void reportPerBlock(const char* what, double ms) {
  std::printf("%s %s: %.3f ms per 64 MiB (%.1f GB/s)\n", role, what, ms, kBlockBytes / (ms / 1e3) / 1e9);
}

// Word `word` of block `block` as the lender writes it.
std::uint64_t pattern(std::size_t block, std::size_t word) {
  return 0x5a5a000000000000ull ^ (std::uint64_t(block) << 32) ^ word;
}

std::uint64_t* blockWords(CUdeviceptr view, std::size_t block) {
  return reinterpret_cast<std::uint64_t*>(view + block * kBlockBytes);
}

CUdevice openDevice0() { return mqx::bench::usePrimaryContext(0, check); }

// Maps each block at its offset in `view`, then opens it to device 0 and to the CPU (whose
// location must match the allocation's: HOST_NUMA or HOST).
void mapBlocks(CUdeviceptr view, const std::vector<CUmemGenericAllocationHandle>& handles, CUdevice device,
               CUmemLocation host, Timing& map, Timing& access) {
  CUmemAccessDesc desc[2] = {};
  desc[0].location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
  desc[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  desc[1].location = host;
  desc[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    const auto start = Clock::now();
    CHECK(cuMemMap(view + i * kBlockBytes, kBlockBytes, 0, handles[i], 0));
    map.add(msSince(start));
  }
  for (std::size_t i = 0; i < handles.size(); ++i) {
    const auto start = Clock::now();
    CHECK(cuMemSetAccess(view + i * kBlockBytes, kBlockBytes, desc, 2));
    access.add(msSince(start));
  }
}

// Copies each block to a device buffer of one block and back into the block, each copy timed
// to completion; the blocks keep their bytes. Returns the buffer (the caller frees it).
CUdeviceptr timeCopies(CUdeviceptr view, std::size_t blocks, Timing& toDevice, Timing& toHost) {
  CUdeviceptr buffer;
  CHECK(cuMemAlloc(&buffer, kBlockBytes));
  CHECK(cuMemsetD8(buffer, 0, kBlockBytes));
  CHECK(cuCtxSynchronize());
  for (std::size_t i = 0; i < blocks; ++i) {
    auto start = Clock::now();
    CHECK(cuMemcpyHtoD(buffer, blockWords(view, i), kBlockBytes));
    CHECK(cuCtxSynchronize());
    toDevice.add(msSince(start));
    start = Clock::now();
    CHECK(cuMemcpyDtoH(blockWords(view, i), buffer, kBlockBytes));
    CHECK(cuCtxSynchronize());
    toHost.add(msSince(start));
  }
  return buffer;
}

void clearCloseOnExec(int fd) {
  const int flags = fcntl(fd, F_GETFD);
  if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0) {
    std::printf("%s: fcntl(%d): %s\n", role, fd, std::strerror(errno));
    std::exit(1);
  }
}

// Waits for the client, at most kClientTimeout; false if it was still running (then killed).
bool waitBounded(pid_t pid, int* status) {
  const auto deadline = Clock::now() + kClientTimeout;
  while (Clock::now() < deadline) {
    const pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) {
      std::printf("%s: waitpid: %s\n", role, std::strerror(errno));
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, status, 0);
  return false;
}

// What the client hands back through its report pipe, for the verdict.
struct ClientResult {
  double lendMs = 0, toDeviceGbps = 0, toHostGbps = 0;
  int bytesMatch = 0;
};

int runClient(const std::vector<int>& fds, CUmemLocation host, int reportFd) {
  role = "client";
  const CUdevice device = openDevice0();
  const std::size_t blocks = fds.size();

  // What a client pays per lent block: import, map, access. The fd is closed once imported.
  std::vector<CUmemGenericAllocationHandle> handles(blocks);
  Timing import, map, access;
  for (std::size_t i = 0; i < blocks; ++i) {
    const auto start = Clock::now();
    CHECK(cuMemImportFromShareableHandle(&handles[i], reinterpret_cast<void*>(static_cast<std::uintptr_t>(fds[i])),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    import.add(msSince(start));
    close(fds[i]);
  }
  auto start = Clock::now();
  CUdeviceptr view;
  CHECK(cuMemAddressReserve(&view, kBlockBytes * blocks, 0, 0, 0));
  std::printf("client address reserve (once, %zu blocks): %.3f ms\n", blocks, msSince(start));
  mapBlocks(view, handles, device, host, map, access);
  report("import", import);
  report("map", map);
  report("access (device+host)", access);
  const double lendMs = import.meanMs() + map.meanMs() + access.meanMs();
  reportPerBlock("import+map+access", lendMs);

  Timing toDevice, toHost;
  const CUdeviceptr buffer = timeCopies(view, blocks, toDevice, toHost);
  report("copy HtoD (imported view -> device)", toDevice);
  report("copy DtoH (device -> imported view)", toHost);

  // The lender's bytes, after that round trip: all of each block through the GPU, and the
  // first and last 4 KiB of each through the CPU (only those, so that the memset below is
  // still the CPU's first touch of nearly every page).
  std::vector<std::uint64_t> copy(kWords);
  std::size_t gpuWrong = 0, cpuWrong = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    CHECK(cuMemcpyHtoD(buffer, blockWords(view, b), kBlockBytes));
    CHECK(cuMemcpyDtoH(copy.data(), buffer, kBlockBytes));
    for (std::size_t w = 0; w < kWords; ++w)
      gpuWrong += copy[w] != pattern(b, w);
    const std::uint64_t* words = blockWords(view, b);
    for (std::size_t w = 0; w < kEdgeWords; ++w) {
      cpuWrong += words[w] != pattern(b, w);
      cpuWrong += words[kWords - 1 - w] != pattern(b, kWords - 1 - w);
    }
  }
  const bool bytesMatch = gpuWrong == 0 && cpuWrong == 0;
  std::printf("client bytes match: %s (wrong words: %zu of %zu through the GPU, %zu of %zu through the CPU)\n",
              bytesMatch ? "yes" : "no", gpuWrong, kWords * blocks, cpuWrong, 2 * kEdgeWords * blocks);

  // First touch from the CPU: page faults show as a first memset slower than the second.
  Timing firstTouch, secondTouch;
  for (Timing* touch : {&firstTouch, &secondTouch})
    for (std::size_t b = 0; b < blocks; ++b) {
      start = Clock::now();
      std::memset(blockWords(view, b), kClientByte, kBlockBytes);
      touch->add(msSince(start));
    }
  report("CPU memset (first touch)", firstTouch);
  report("CPU memset (second touch)", secondTouch);

  Timing unmap, release;
  for (std::size_t i = 0; i < blocks; ++i) {
    start = Clock::now();
    CHECK(cuMemUnmap(view + i * kBlockBytes, kBlockBytes));
    unmap.add(msSince(start));
  }
  for (std::size_t i = 0; i < blocks; ++i) {
    start = Clock::now();
    CHECK(cuMemRelease(handles[i]));
    release.add(msSince(start));
  }
  report("unmap", unmap);
  report("release (imported)", release);
  CHECK(cuMemAddressFree(view, kBlockBytes * blocks));
  CHECK(cuMemFree(buffer));

  std::fflush(stdout);
  dprintf(reportFd, "%.6f %.6f %.6f %d\n", lendMs, toDevice.gbps(), toHost.gbps(), bytesMatch ? 1 : 0);
  close(reportFd);
  return bytesMatch ? 0 : 2;
}

int runLender(std::size_t blocks) {
  const CUdevice device = openDevice0();
  char name[256] = {};
  CHECK(cuDeviceGetName(name, sizeof name, device));
  int fdExport = 0, hostNumaVmm = 0, nearestNode = -1;
  CHECK(cuDeviceGetAttribute(&fdExport, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device));
  CHECK(cuDeviceGetAttribute(&hostNumaVmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device));
  CHECK(cuDeviceGetAttribute(&nearestNode, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, device));
  std::printf("lender: %s; POSIX fd export %s, HOST_NUMA cuMemCreate %s, nearest host NUMA node %d; %zu blocks\n", name,
              fdExport ? "supported" : "NOT supported", hostNumaVmm ? "supported" : "NOT supported", nearestNode,
              blocks);

  // Pinned host blocks that can be exported as fds: HOST_NUMA node 0, else HOST (which cuda.h
  // says cannot be exported; tried so that the refusal is seen, not assumed).
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::vector<CUmemGenericAllocationHandle> handles(blocks);
  Timing create;
  for (std::size_t i = 0; i < blocks; ++i) {
    auto start = Clock::now();
    CUresult result = cuMemCreate(&handles[i], kBlockBytes, &prop, 0);
    if (i == 0 && result != CUDA_SUCCESS) {
      const char* error = nullptr;
      cuGetErrorName(result, &error);
      std::printf("lender: cuMemCreate HOST_NUMA node 0 with POSIX fd refused (%s); trying HOST (cuda.h: \"HOST "
                  "allocations are not IPC capable\")\n",
                  error != nullptr ? error : "?");
      prop.location = {CU_MEM_LOCATION_TYPE_HOST, 0};
      start = Clock::now();
      result = cuMemCreate(&handles[i], kBlockBytes, &prop, 0);
    }
    check(result, "cuMemCreate(64 MiB, pinned host, POSIX fd)");
    create.add(msSince(start));
  }
  const bool numa = prop.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
  std::printf("lender host blocks: %s\n", numa ? "HOST_NUMA node 0" : "HOST");

  std::vector<int> fds(blocks);
  Timing exports;
  for (std::size_t i = 0; i < blocks; ++i) {
    const auto start = Clock::now();
    CHECK(cuMemExportToShareableHandle(&fds[i], handles[i], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    exports.add(msSince(start));
  }

  // The lender's own view: what creating costs a process today, and the copy rates that the
  // client's must match. The pattern written here is what the client checks.
  CUdeviceptr view;
  CHECK(cuMemAddressReserve(&view, kBlockBytes * blocks, 0, 0, 0));
  Timing map, access, fill;
  mapBlocks(view, handles, device, prop.location, map, access);
  for (std::size_t b = 0; b < blocks; ++b) {
    const auto start = Clock::now();
    std::uint64_t* words = blockWords(view, b);
    for (std::size_t w = 0; w < kWords; ++w)
      words[w] = pattern(b, w);
    fill.add(msSince(start));
  }
  Timing toDevice, toHost;
  const CUdeviceptr buffer = timeCopies(view, blocks, toDevice, toHost);
  report("create", create);
  report("export (POSIX fd)", exports);
  report("map", map);
  report("access (device+host)", access);
  const double createMs = create.meanMs() + map.meanMs() + access.meanMs();
  reportPerBlock("create+map+access (a client's cost today)", createMs);
  report("CPU pattern fill (first touch)", fill);
  report("copy HtoD (own view -> device)", toDevice);
  report("copy DtoH (device -> own view)", toHost);

  // The client: this binary again, through exec, with the fds and a report pipe inherited.
  for (int fd : fds)
    clearCloseOnExec(fd);
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) {
    std::printf("lender: pipe2: %s\n", std::strerror(errno));
    return 1;
  }
  clearCloseOnExec(pipeFds[1]);
  std::string fdList;
  for (int fd : fds)
    fdList += (fdList.empty() ? "" : ",") + std::to_string(fd);
  const std::string hostArg = numa ? "numa" : "host", reportArg = std::to_string(pipeFds[1]);
  std::vector<std::string> args = {"mqx-host-pool-import", "--child", fdList, "--host", hostArg, "--report", reportArg};
  std::vector<char*> argv;
  for (std::string& arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ);
  close(pipeFds[1]);
  if (spawned != 0) {
    std::printf("lender: posix_spawn: %s\n", std::strerror(spawned));
    return 1;
  }
  int status = 0;
  const bool finished = waitBounded(pid, &status);
  if (!finished) std::printf("lender: the client was still running after 120 s: killed it\n");
  ClientResult client;
  char line[256] = {};
  const ssize_t got = read(pipeFds[0], line, sizeof line - 1);
  close(pipeFds[0]);
  const bool reported = got > 0 && std::sscanf(line, "%lf %lf %lf %d", &client.lendMs, &client.toDeviceGbps,
                                               &client.toHostGbps, &client.bytesMatch) == 4;

  // The other direction: the client's memset, seen through the lender's own view.
  bool seesClient = true;
  if (reported) {
    std::uint64_t expected;
    std::memset(&expected, kClientByte, sizeof expected);
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t w = 0; w < kWords; w += kWords / 64)
        seesClient = seesClient && blockWords(view, b)[w] == expected;
    std::printf("lender sees the client's writes: %s\n", seesClient ? "yes" : "no");
  }

  for (std::size_t i = 0; i < blocks; ++i)
    CHECK(cuMemUnmap(view + i * kBlockBytes, kBlockBytes));
  for (std::size_t i = 0; i < blocks; ++i) {
    CHECK(cuMemRelease(handles[i]));
    close(fds[i]);
  }
  CHECK(cuMemAddressFree(view, kBlockBytes * blocks));
  CHECK(cuMemFree(buffer));

  if (!reported || !WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2)) {
    const char* how = !finished ? "timed out" : WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no report";
    std::printf("verdict: no answer: the client failed (%s; its error is above)\n", how);
    return 1;
  }
  if (!client.bytesMatch || !seesClient) {
    std::printf("verdict: no: the two processes do not see the same bytes\n");
    return 1;
  }
  const double lendGbps = kBlockBytes / (client.lendMs / 1e3) / 1e9;
  const double createGbps = kBlockBytes / (createMs / 1e3) / 1e9;
  const double speedup = createMs / client.lendMs;
  // Worth it when lending is at least twice as cheap as creating and copies lose under 10%.
  const bool cheap = speedup >= 2;
  const bool fastCopies = client.toDeviceGbps >= 0.9 * toDevice.gbps() && client.toHostGbps >= 0.9 * toHost.gbps();
  std::printf("verdict: %s: a lent block costs the client %.2f ms per 64 MiB (%.1f GB/s), %.1fx %s than creating one "
              "(%.2f ms, %.1f GB/s; the bar is 2x); copies through it run at HtoD %.1f / DtoH %.1f GB/s against the "
              "lender's %.1f / %.1f (%s)\n",
              cheap && fastCopies ? "yes" : "no", client.lendMs, lendGbps, speedup >= 1 ? speedup : 1 / speedup,
              speedup >= 1 ? "cheaper" : "dearer", createMs, createGbps, client.toDeviceGbps, client.toHostGbps,
              toDevice.gbps(), toHost.gbps(), fastCopies ? "as fast" : "slower by over 10%");
  return 0; // a "no" is an answer, not a failure
}

int usage() {
  std::printf("usage: mqx-host-pool-import [--blocks N]   (N pinned 64 MiB host blocks, default 32)\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  long blocks = 32;
  const char* childFds = nullptr;
  const char* host = "numa";
  int reportFd = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--blocks" && hasValue)
      blocks = std::strtol(argv[++i], nullptr, 10);
    else if (arg == "--child" && hasValue)
      childFds = argv[++i];
    else if (arg == "--host" && hasValue)
      host = argv[++i];
    else if (arg == "--report" && hasValue)
      reportFd = std::atoi(argv[++i]);
    else
      return usage();
  }
  if (childFds == nullptr) return blocks > 0 && blocks <= 1024 ? runLender(blocks) : usage();

  std::vector<int> fds;
  for (const char* at = childFds; *at != '\0';) { // "fd,fd,...", as the lender writes it
    char* end = nullptr;
    const long fd = std::strtol(at, &end, 10);
    if (end == at || (*end != ',' && *end != '\0')) return usage();
    fds.push_back(static_cast<int>(fd));
    at = *end == ',' ? end + 1 : end;
  }
  const CUmemLocation location = std::strcmp(host, "host") == 0 ? CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0}
                                                                : CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  return fds.empty() || reportFd < 0 ? usage() : runClient(fds, location, reportFd);
}
