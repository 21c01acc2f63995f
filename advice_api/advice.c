/*
 * libmqx_advice: forwards cudaAdvice to the preloaded libmqx (mqx_advise),
 * mqx_declare_resizable(_name) to mqx_declare_resizable_handle/_by_name, and
 * mqx_declare_operator to mqx_node_declare_operator,
 * found once through the global symbol scope. Without libmqx it is a no-op,
 * so the same binary runs natively and under mqx.
 */
#define _GNU_SOURCE
#include "mqx/advice.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

typedef int (*mqx_advise_fn)(uint64_t address, int flags);
typedef int (*mqx_declare_fn)(const void* function);
typedef int (*mqx_declare_name_fn)(const char* name);
typedef int (*mqx_operator_fn)(double seconds, uint64_t bytes);

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static mqx_advise_fn advise_fn;
static mqx_declare_fn declare_fn;
static mqx_declare_name_fn declare_name_fn;
static mqx_operator_fn operator_fn;

static void resolve(void) {
  advise_fn = (mqx_advise_fn)dlsym(RTLD_DEFAULT, "mqx_advise");
  declare_fn = (mqx_declare_fn)dlsym(RTLD_DEFAULT, "mqx_declare_resizable_handle");
  declare_name_fn = (mqx_declare_name_fn)dlsym(RTLD_DEFAULT, "mqx_declare_resizable_by_name");
  operator_fn = (mqx_operator_fn)dlsym(RTLD_DEFAULT, "mqx_node_declare_operator");
}

__attribute__((visibility("default"))) int cudaAdvice(const void* devicePtr, int flags) {
  if (flags != MQX_ADVICE_INPUT && flags != MQX_ADVICE_OUTPUT && flags != MQX_ADVICE_BOTH) return 1;
  pthread_once(&resolve_once, resolve);
  if (advise_fn == NULL) return 0;
  return advise_fn((uint64_t)(uintptr_t)devicePtr, flags);
}

__attribute__((visibility("default"))) int mqx_declare_resizable(const void* function) {
  if (function == NULL) return 1;
  pthread_once(&resolve_once, resolve);
  if (declare_fn == NULL) return 0;
  return declare_fn(function);
}

__attribute__((visibility("default"))) int mqx_declare_resizable_name(const char* name) {
  if (name == NULL || *name == '\0') return 1;
  pthread_once(&resolve_once, resolve);
  if (declare_name_fn == NULL) return 0;
  return declare_name_fn(name);
}

__attribute__((visibility("default"))) int mqx_declare_operator(double expected_seconds, size_t device_bytes) {
  /* Not positive, or NaN, or infinite: never a valid expected time. */
  if (!(expected_seconds > 0) || expected_seconds > 1e300) return 1;
  pthread_once(&resolve_once, resolve);
  if (operator_fn == NULL) return 0;
  return operator_fn(expected_seconds, (uint64_t)device_bytes);
}
