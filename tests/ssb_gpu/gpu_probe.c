/*
 * The SSB GPU tests' own probe, used when tests/gpu (and its mqx_gpu_probe)
 * is not built: exits 0 when a CUDA device can be used and 77 (ctest's skip
 * code) when there is no driver or no device. It opens the driver itself so
 * that it starts on machines without CUDA.
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_fn)(unsigned);
typedef int (*count_fn)(int*);

int main(void) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) {
    printf("ssb-gpu-probe: no CUDA driver: skipping\n");
    return 77;
  }
  init_fn init = (init_fn)dlsym(driver, "cuInit");
  count_fn count = (count_fn)dlsym(driver, "cuDeviceGetCount");
  int devices = 0;
  int result = init != NULL && count != NULL ? init(0) : -1;
  if (result == 0) result = count(&devices);
  if (result != 0 || devices == 0) {
    printf("ssb-gpu-probe: no usable CUDA device (%d, %d devices): skipping\n", result, devices);
    return 77;
  }
  return 0;
}
