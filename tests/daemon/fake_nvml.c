/*
 * A stand-in libnvidia-ml.so.1 for the daemon tests (devices_test.cpp): a
 * node of three GPUs of 16 GiB, UUIDs GPU-00000000-0000-4000-8000-00000000000<i>,
 * so that mqxd's NVML listing, CUDA_VISIBLE_DEVICES and the UUID that
 * mqx-run exports are tested without a GPU. Only the entry points mqxd uses
 * (daemon/node_capacity.cpp), with NVML's C signatures (nvmlReturn_t is an
 * int, 0 is NVML_SUCCESS).
 */
#include <stdio.h>

typedef struct {
  unsigned long long total, free, used;
} FakeMemory;

enum { kGpus = 3, kInvalidArgument = 2, kNotInitialised = 1 };
static int initialised = 0;
static int handles[kGpus];

int nvmlInit_v2(void) {
  initialised = 1;
  return 0;
}
int nvmlShutdown(void) {
  initialised = 0;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!initialised) return kNotInitialised;
  *count = kGpus;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!initialised) return kNotInitialised;
  if (index >= kGpus) return kInvalidArgument;
  handles[index] = (int)index;
  *device = &handles[index];
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  if (device == NULL || length < 41) return kInvalidArgument;
  snprintf(uuid, length, "GPU-00000000-0000-4000-8000-00000000000%d", *(int*)device);
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, FakeMemory* memory) {
  if (device == NULL) return kInvalidArgument;
  memory->total = 16ull << 30;
  memory->used = 1ull << 30;
  memory->free = memory->total - memory->used;
  return 0;
}
int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  if (device == NULL) return kInvalidArgument;
  snprintf(name, length, "Fake GPU %d", *(int*)device);
  return 0;
}
