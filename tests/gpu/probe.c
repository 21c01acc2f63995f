/*
 * gpu-probe: exits 0 when a CUDA device can be used, 77 (ctest's skip code)
 * when there is no driver or no device. It opens the driver itself so that
 * it starts on any machine, and it runs without libmqx preloaded. The SSB
 * GPU tests use it too (tests/ssb_gpu builds its own copy where tests/gpu is
 * skipped).
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_fn)(unsigned);
typedef int (*count_fn)(int*);

int main(void) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == NULL) {
    printf("gpu-probe: no CUDA driver (%s): skipping\n", dlerror());
    return 77;
  }
  init_fn init = (init_fn)dlsym(driver, "cuInit");
  count_fn count = (count_fn)dlsym(driver, "cuDeviceGetCount");
  int devices = 0;
  int result = init != NULL && count != NULL ? init(0) : -1;
  if (result == 0) result = count(&devices);
  if (result != 0 || devices == 0) {
    printf("gpu-probe: no usable CUDA device (cuInit/cuDeviceGetCount: %d, devices %d): skipping\n", result, devices);
    return 77;
  }
  return 0;
}
