/*
 * libmqx_advice: forwards cudaAdvice to the preloaded libmqx (mqx_advise),
 * found once through the global symbol scope. Without libmqx it is a no-op,
 * so the same binary runs natively and under mqx.
 */
#define _GNU_SOURCE
#include "mqx/advice.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

typedef int (*mqx_advise_fn)(uint64_t address, int flags);

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static mqx_advise_fn advise_fn;

static void resolve(void) { advise_fn = (mqx_advise_fn)dlsym(RTLD_DEFAULT, "mqx_advise"); }

__attribute__((visibility("default"))) int cudaAdvice(const void* devicePtr, int flags) {
  if (flags != MQX_ADVICE_INPUT && flags != MQX_ADVICE_OUTPUT && flags != MQX_ADVICE_BOTH) return 1;
  pthread_once(&resolve_once, resolve);
  if (advise_fn == NULL) return 0;
  return advise_fn((uint64_t)(uintptr_t)devicePtr, flags);
}
