#!/usr/bin/env bash
# demo_test.sh CASE SOURCE_DIR [BUILD_DIR CUDA_ENABLED]: scripts/demo's list
# of the targets it builds (scripts/demo --print-targets) against what uses it,
# and the build progress it shows (scripts/lib/steps.sh). Cases:
#   targets    --help and the README name every target of the list; the build
#              in BUILD_DIR defines each (those marked "where the CUDA toolkit
#              is found" exactly where CUDA_ENABLED is true)
#   arguments  a copy of scripts/demo in a scratch tree hands scripts/build
#              the list (--target, --optional-target) and exits with the
#              build's status when the build fails
#   progress   build_progress without a terminal: of 200 ninja status lines a
#              line per tenth, other lines as they come, all of them in its log
set -euo pipefail
case=${1:?case}
source_dir=$(realpath "${2:?source dir}")
fail() { echo "FAIL ($case): $*" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

listed=$("$source_dir/scripts/demo" --print-targets)
targets=$(sed -n 's/^\([^ ]*\)$/\1/p' <<<"$listed")
optional=$(sed -n 's/^\([^ ]*\) (on a GPU host where the CUDA toolkit is found)$/\1/p' <<<"$listed")
[ -n "$targets" ] || fail "scripts/demo --print-targets lists no target"
[ "$(grep -c . <<<"$listed")" = "$(cat <<<"$targets"$'\n'"$optional" | grep -c .)" ] ||
  fail "unexpected lines in scripts/demo --print-targets: $listed"

case $case in
targets)
  build=${3:?build dir}
  cuda=${4:?CUDA enabled}
  help=$("$source_dir/scripts/demo" --help)
  defined=$(cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\([^ :]*\): .*/\1/p')
  [ -n "$defined" ] || fail "cmake --build $build --target help lists no target"
  for target in $targets $optional; do
    grep -qE "^ +$target( |$)" <<<"$help" || fail "scripts/demo --help does not name $target"
    grep -qF "\`$target\`" "$source_dir/README.md" || fail "README.md does not name \`$target\`"
  done
  for target in $targets; do
    grep -qxF "$target" <<<"$defined" || fail "the build defines no target $target"
  done
  for target in $optional; do
    case $cuda in
    1 | ON | TRUE | YES) grep -qxF "$target" <<<"$defined" || fail "the build (with CUDA) defines no target $target" ;;
    *) ! grep -qxF "$target" <<<"$defined" || fail "$target is marked as a CUDA target, but the build without CUDA defines it" ;;
    esac
  done
  echo "targets: $(paste -sd ' ' <<<"$targets"); with CUDA: $(paste -sd ' ' <<<"$optional")"
  ;;
arguments)
  mkdir -p "$scratch/scripts/lib"
  cp "$source_dir/scripts/demo" "$scratch/scripts/demo"
  cp "$source_dir/scripts/lib/steps.sh" "$scratch/scripts/lib/steps.sh"
  printf '#!/bin/sh\necho "$@" > "$(dirname "$0")/../build-arguments"\nexit 3\n' >"$scratch/scripts/build"
  chmod +x "$scratch/scripts/build"
  rc=0
  "$scratch/scripts/demo" >"$scratch/out" 2>&1 || rc=$?
  [ "$rc" = 3 ] || { cat "$scratch/out"; fail "expected the build's exit status 3, got $rc"; }
  # The CUDA targets are asked for on a GPU host only (nvidia-smi lists a GPU).
  gpu_listed=0
  if command -v nvidia-smi >/dev/null 2>&1 && timeout 60 nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu_listed=1
  fi
  expected=$(for t in $targets; do printf -- '--target %s ' "$t"; done
             [ "$gpu_listed" = 0 ] || for t in $optional; do printf -- '--optional-target %s ' "$t"; done)
  [ "$(cat "$scratch/build-arguments")" = "${expected% }" ] ||
    fail "scripts/build got '$(cat "$scratch/build-arguments")', expected '${expected% }'"
  ;;
progress)
  # shellcheck source=../../scripts/lib/steps.sh
  . "$source_dir/scripts/lib/steps.sh"
  {
    for i in $(seq 1 200); do
      echo "[$i/200] Building CXX object file$i.o"
      [ "$i" != 57 ] || echo "file57.cpp:1:1: warning: something"
    done
    echo "ninja: build stopped."
  } | build_progress "$scratch/log" >"$scratch/out"
  [ "$(grep -c . "$scratch/log")" = 202 ] || fail "the log holds $(grep -c . "$scratch/log") lines, not 202"
  shown=$(grep -cE '^    \[[0-9]+/200\] ' "$scratch/out" || true)
  [ "$shown" -ge 10 ] && [ "$shown" -le 12 ] || { cat "$scratch/out"; fail "$shown status lines shown, expected one per tenth"; }
  grep -qE '^    \[200/200\] Building CXX object file200\.o \([0-9]+ s\)$' "$scratch/out" ||
    fail "the last status line is not shown with the build's time so far"
  grep -qxF "file57.cpp:1:1: warning: something" "$scratch/out" || fail "a compiler's line is not shown"
  grep -qxF "ninja: build stopped." "$scratch/out" || fail "ninja's closing line is not shown"
  ! grep -q $'\r' "$scratch/out" || fail "carriage returns without a terminal"
  ;;
*) fail "unknown case" ;;
esac
echo "PASS ($case)"
