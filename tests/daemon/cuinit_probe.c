/*
 * mqx_cuinit_probe: the start of a CUDA program, for the tests of a query
 * started before its admission (start_before_admission_test.cpp). Run under
 * mqx-run with libmqx.so preloaded over the fake libcuda of tests/gpu/cpu:
 * prints "started", calls cuInit (libmqx's hook: the admission gate), then
 * prints "cuInit RESULT gpu=$CUDA_VISIBLE_DEVICES sim=$MQX_SIM_DEVICE
 * driver-inits N", N being the cuInit calls the driver itself saw, and exits
 * 0 when cuInit succeeded, 9 otherwise.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

int fake_calls(const char* name); /* the fake driver's call counter */

static const char* variable(const char* name) {
  const char* value = getenv(name);
  return value != NULL ? value : "";
}

int main(void) {
  puts("started");
  fflush(stdout);
  const CUresult result = cuInit(0);
  printf("cuInit %d gpu=%s sim=%s driver-inits %d\n", (int)result, variable("CUDA_VISIBLE_DEVICES"),
         variable("MQX_SIM_DEVICE"), fake_calls("cuInit"));
  fflush(stdout);
  return result == CUDA_SUCCESS ? 0 : 9;
}
