#!/usr/bin/env bash
# Runs one GPU test program: skips (77) without a usable GPU, otherwise runs
# the program with libmqx preloaded unless the first argument is "native".
#   run_gpu_test.sh PROBE LIBMQX|native PROGRAM [ARGS...]
set -u
probe=$1 preload=$2
shift 2
"$probe" || exit $?
if [ "$preload" = native ]; then
  exec "$@"
fi
export LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"
exec "$@"
