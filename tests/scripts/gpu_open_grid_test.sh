#!/usr/bin/env bash
# gpu_open_grid_test.sh GPU_OPEN_GRID: tools/gpu-open-grid refuses what it
# cannot run before it builds or runs anything: no SPEC, a TAG that would
# not name a file, a malformed SPEC (each field), a time bound that is not a
# number; each exits 2 with one line naming what was wrong.
set -uo pipefail
tool=${1:?path to tools/gpu-open-grid}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() { # WANT_TEXT ARGS...: exit 2, one line, naming WANT_TEXT, nothing built
  local want=$1
  shift
  local err rc
  err=$(OUT=$scratch/out MQX_BUILD_DIR=$scratch/no-build "$tool" "$@" 2>&1)
  rc=$?
  [ "$rc" = 2 ] || fail "$*: exit $rc, want 2: $err"
  grep -qF -- "$want" <<<"$err" || fail "$*: no '$want' in: $err"
  [ ! -e "$scratch/no-build" ] || fail "$*: it built before refusing"
}
err=$(OUT=$scratch/out "$tool" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "SEED:RATE:ROUNDS:ADMISSIONS" <<<"$err" || fail "no arguments: exit $rc, $err"
refused "TAG 'a/b'" 'a/b' 8:1.0:3:FIX-2
refused "'x:1.0:3:FIX-2' is not" t x:1.0:3:FIX-2
refused "'8:fast:3:FIX-2' is not" t 8:fast:3:FIX-2
refused "'8:1.0:0:FIX-2' is not" t 8:1.0:0:FIX-2
refused "'8:1.0:3:' is not" t 8:1.0:3:
refused "'8:1.0:3' is not" t 7:1.0:3:FIX-2 8:1.0:3
MQX_GPU_OPEN_GRID_SECONDS=soon refused "MQX_GPU_OPEN_GRID_SECONDS 'soon'" t 8:1.0:3:FIX-2
echo "gpu-open-grid: argument errors checked"
