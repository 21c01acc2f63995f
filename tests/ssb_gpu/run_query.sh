#!/usr/bin/env bash
# Runs one SSB GPU query program for ctest: skips (77) without a usable GPU,
# otherwise runs it natively or with libmqx preloaded.
#   run_query.sh PROBE native|LIBMQX PROGRAM [ARGS...]
set -u
probe=$1 preload=$2
shift 2
"$probe" || exit $?
if [ "$preload" != native ]; then
  export LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"
fi
exec "$@"
