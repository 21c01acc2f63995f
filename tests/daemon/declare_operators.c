/*
 * mqx_declare_operators: a query program that declares its operators through
 * libmqx_advice (mqx_declare_operator), for the advice path's end-to-end
 * tests: run under mqx-run, libmqx.so preloaded, it reaches libmqx's
 * mqx_node_declare_operator and through it mqxd (docs/daemon.md).
 *
 *   mqx_declare_operators HOLD_MS STEP...
 *     SECONDS:BYTES  declares one operator; prints "declared" (0 returned)
 *                    or "refused" (1: not a valid operator)
 *     wait           prints "waiting" and sleeps HOLD_MS
 *   then prints "done" and exits 0 (2: bad arguments).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqx/advice.h"

static void say(const char* line) {
  puts(line);
  fflush(stdout);
}

static void sleepMilliseconds(long milliseconds) {
  struct timespec time = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
  while (nanosleep(&time, &time) != 0) {
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mqx_declare_operators HOLD_MS (SECONDS:BYTES | wait)...\n");
    return 2;
  }
  const long hold = atol(argv[1]);
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "wait") == 0) {
      say("waiting");
      sleepMilliseconds(hold);
      continue;
    }
    char* end = NULL;
    const double seconds = strtod(argv[i], &end);
    if (end == argv[i] || *end != ':') {
      fprintf(stderr, "mqx_declare_operators: bad step '%s'\n", argv[i]);
      return 2;
    }
    const size_t bytes = (size_t)strtoull(end + 1, NULL, 10);
    say(mqx_declare_operator(seconds, bytes) == 0 ? "declared" : "refused");
  }
  say("done");
  return 0;
}
