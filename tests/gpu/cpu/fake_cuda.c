/*
 * A stand-in libcuda.so.1 for checking libmqx's symbol-resolution routes and
 * its pass-through on a machine without a GPU. It exports a few driver entry
 * points that count their calls, and a cuGetProcAddress that hands out
 * either its exported functions (as the real driver is expected to) or, with
 * FAKE_CUDA_HIDDEN_POINTERS=1, unexported wrappers (so that libmqx has to
 * fall back to its version rules). FAKE_CUDA_NO_DEVICE=1 makes cuInit fail
 * like a machine without a GPU. Linked with -Bsymbolic so that its own
 * references never reach libmqx's hooks.
 */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#undef cuGetProcAddress

#define FAKE_EXPORT __attribute__((visibility("default")))

static struct {
  const char* name;
  int calls;
} counters[32];

static void count(const char* name) {
  for (int i = 0; i < 32; ++i) {
    if (counters[i].name == NULL) counters[i].name = name;
    if (strcmp(counters[i].name, name) == 0) {
      ++counters[i].calls;
      return;
    }
  }
}

FAKE_EXPORT int fake_calls(const char* name) {
  for (int i = 0; i < 32 && counters[i].name != NULL; ++i)
    if (strcmp(counters[i].name, name) == 0) return counters[i].calls;
  return 0;
}

FAKE_EXPORT CUresult cuInit(unsigned flags) {
  count("cuInit");
  return getenv("FAKE_CUDA_NO_DEVICE") != NULL ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* context) {
  *context = NULL; /* never a context: libmqx never activates */
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  *name = "FAKE_ERROR";
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  count("cuDeviceGetName");
  strncpy(name, "fake", (size_t)length);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* pointer, size_t bytes) {
  count("cuMemAlloc_v2");
  *pointer = 0x1000;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) {
  count("cuMemFree_v2");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr destination, const void* source, size_t bytes) {
  count("cuMemcpyHtoD_v2");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr destination, const void* source, size_t bytes) {
  count("cuMemcpyHtoD_v2_ptds");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* destination, CUdeviceptr source, size_t bytes) {
  count("cuMemcpyDtoH_v2");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr destination, unsigned char value, size_t n, CUstream stream) {
  count("cuMemsetD8Async");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr destination, unsigned char value, size_t n, CUstream stream) {
  count("cuMemsetD8Async_ptsz");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  count("cuLaunchKernel");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSynchronize(void) {
  count("cuCtxSynchronize");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext context) {
  count("cuCtxSynchronize_v2");
  return CUDA_SUCCESS;
}

/* Unexported wrappers, for FAKE_CUDA_HIDDEN_POINTERS. */
static CUresult hiddenMemAlloc(CUdeviceptr* pointer, size_t bytes) { return cuMemAlloc_v2(pointer, bytes); }
static CUresult hiddenMemcpyHtoD(CUdeviceptr d, const void* s, size_t n) { return cuMemcpyHtoD_v2(d, s, n); }
static CUresult hiddenMemcpyHtoDPtds(CUdeviceptr d, const void* s, size_t n) { return cuMemcpyHtoD_v2_ptds(d, s, n); }
static CUresult hiddenCtxSynchronize(void) { return cuCtxSynchronize(); }
static CUresult hiddenCtxSynchronizeV2(CUcontext c) { return cuCtxSynchronize_v2(c); }
static CUresult hiddenMemsetD8AsyncPtsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return cuMemsetD8Async_ptsz(d, v, n, s);
}
static CUresult hiddenDeviceGetName(char* name, int length, CUdevice device) {
  return cuDeviceGetName(name, length, device);
}

struct Entry {
  const char* symbol;
  int since;
  int perThread; /* 1: only for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
  void* exported;
  void* hidden;
};

CUresult cuGetProcAddress_v2(const char* symbol, void** function, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status);

static const struct Entry* lookup(const char* symbol, int version, cuuint64_t flags) {
  static const struct Entry entries[] = {
      {"cuMemAlloc", 3020, 0, (void*)cuMemAlloc_v2, (void*)hiddenMemAlloc},
      {"cuMemcpyHtoD", 3020, 0, (void*)cuMemcpyHtoD_v2, (void*)hiddenMemcpyHtoD},
      {"cuMemcpyHtoD", 7000, 1, (void*)cuMemcpyHtoD_v2_ptds, (void*)hiddenMemcpyHtoDPtds},
      {"cuMemsetD8Async", 7000, 1, (void*)cuMemsetD8Async_ptsz, (void*)hiddenMemsetD8AsyncPtsz},
      {"cuCtxSynchronize", 2000, 0, (void*)cuCtxSynchronize, (void*)hiddenCtxSynchronize},
      {"cuCtxSynchronize", 13000, 0, (void*)cuCtxSynchronize_v2, (void*)hiddenCtxSynchronizeV2},
      {"cuDeviceGetName", 2000, 0, (void*)cuDeviceGetName, (void*)hiddenDeviceGetName},
      {"cuGetProcAddress", 12000, 0, (void*)cuGetProcAddress_v2, (void*)cuGetProcAddress_v2},
  };
  int perThread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const struct Entry* best = NULL;
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
    const struct Entry* e = &entries[i];
    if (strcmp(e->symbol, symbol) != 0 || e->since > version || (e->perThread && !perThread)) continue;
    if (best == NULL || e->since > best->since || (e->perThread && !best->perThread)) best = e;
  }
  return best;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** function, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  const struct Entry* entry = lookup(symbol, version, flags);
  if (entry == NULL) {
    *function = NULL;
    if (status != NULL) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *function = getenv("FAKE_CUDA_HIDDEN_POINTERS") != NULL ? entry->hidden : entry->exported;
  if (status != NULL) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** function, int version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, function, version, flags, NULL);
}

/* The fake's own address of one of its exports (what dlsym would give
 * without libmqx). */
FAKE_EXPORT void* fake_self(const char* name) {
  if (strcmp(name, "cuMemAlloc_v2") == 0) return (void*)cuMemAlloc_v2;
  if (strcmp(name, "cuMemcpyHtoD_v2_ptds") == 0) return (void*)cuMemcpyHtoD_v2_ptds;
  if (strcmp(name, "cuLaunchKernel") == 0) return (void*)cuLaunchKernel;
  if (strcmp(name, "cuDeviceGetName") == 0) return (void*)cuDeviceGetName;
  if (strcmp(name, "cuGetProcAddress_v2") == 0) return (void*)cuGetProcAddress_v2;
  return NULL;
}
