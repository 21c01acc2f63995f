#!/usr/bin/env bash
# test_summary_test.sh CASE SCRIPTS_TEST: runs a copy of SCRIPTS_TEST
# (scripts/test) in a scratch tree whose scripts/build does nothing and whose
# build/ holds a hand-written ctest file (two tests, two labelled gpu, and a
# fixture labelled both ways that one of each needs, as the SSB test data is),
# a fake nvidia-smi first on PATH and a fake cuda-samples folder (run.sh from
# ../shared/cuda-samples' interface: SAMPLES, LOGS, a line per sample, its
# summary line), so that the GPU branches are exercised on a machine without a
# GPU. Every case checks that the fixture ran once, that ctest's closing line
# is shown and that the summary gives each part's time. Cases:
#   no_gpu        nvidia-smi lists none: one ctest run, GPU parts "skipped: no GPU", exit 0
#   gpu_pass      a GPU: the rest (run in the background), the GPU suite and the
#                 cuda-samples (three run.sh at a time, each sample run once) counted,
#                 the wait for the rest naming the test still running, exit 0
#   gpu_failures  a test of the rest and a GPU test fail, a sample fails under
#                 libmqx.so only: exit 1
set -euo pipefail
case=${1:?case}
scripts_test=$(realpath "${2:?path to scripts/test}")

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL ($case): $*" >&2; exit 1; }

repo=$scratch/repo
mkdir -p "$repo/scripts/lib" "$repo/build/lib" "$repo/build/tests/gpu" "$scratch/bin"
cp "$scripts_test" "$repo/scripts/test"
cp "$(dirname "$scripts_test")/lib/steps.sh" "$repo/scripts/lib/steps.sh"
mkdir -p "$repo/tools"
cp "$(dirname "$scripts_test")/../tools/select-samples" "$repo/tools/select-samples"
printf '#!/bin/sh\nexit 0\n' > "$repo/scripts/build"
printf '#!/bin/sh\nexit 0\n' > "$repo/build/tests/gpu/mqx_gpu_probe"
chmod +x "$repo/scripts/build" "$repo/build/tests/gpu/mqx_gpu_probe"
touch "$repo/build/lib/libmqx.so" "$repo/build/CMakeCache.txt"
# FAKE_SLOW keeps unit.one running until 3 s after the cuda-samples' table
# is written, so that scripts/test waits for it (at most 100 s more).
# FAKE_FAIL makes unit.two and gpu.two fail (without a GPU gpu.two skips, as
# the suite does). The fixture counts its runs in setup-runs (tests run in
# the build folder).
cat > "$repo/build/CTestTestfile.cmake" <<'EOF'
add_test(data.setup "sh" "-c" "echo ran >> ../setup-runs")
set_tests_properties(data.setup PROPERTIES LABELS "unit;gpu" FIXTURES_SETUP data)
add_test(unit.one "sh" "-c" "[ -z \"$FAKE_SLOW\" ] && exit 0; for i in $(seq 500); do grep -q '^samples ' test-logs/cuda-samples.log 2>/dev/null && break; sleep 0.2; done; sleep 3")
set_tests_properties(unit.one PROPERTIES LABELS "unit")
add_test(unit.two "sh" "-c" "[ -z \"$FAKE_FAIL\" ]")
set_tests_properties(unit.two PROPERTIES LABELS "unit" FIXTURES_REQUIRED data)
add_test(gpu.one "sh" "-c" "[ -n \"$FAKE_GPU\" ] || exit 77")
set_tests_properties(gpu.one PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77 FIXTURES_REQUIRED data)
add_test(gpu.two "sh" "-c" "[ -n \"$FAKE_GPU\" ] || exit 77; [ -z \"$FAKE_FAIL\" ]")
set_tests_properties(gpu.two PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
EOF

# Three samples; with FAKE_FAIL, s3 fails under LD_PRELOAD only. LANGUAGES
# NONE: no compiler checks, the configure takes a moment.
samples=$scratch/cuda-samples
mkdir -p "$samples/Samples/A/s1" "$samples/Samples/A/s2" "$samples/Samples/B/s3"
cat > "$samples/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(fake_samples LANGUAGES NONE)
foreach(name s1 s2 s3)
  file(WRITE ${CMAKE_BINARY_DIR}/${name}/${name}
       "#!/bin/sh\n[ -n \"$LD_PRELOAD\" ] && [ -n \"$FAKE_FAIL\" ] && [ ${name} = s3 ] && exit 1\nexit 0\n")
  file(CHMOD ${CMAKE_BINARY_DIR}/${name}/${name} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endforeach()
EOF
# run.sh's interface: BUILD LIBMQX LIMIT, the samples of $SAMPLES (GROUP/NAME),
# their logs in $LOGS; a header, one line per sample, then its summary. Each
# run of a sample is counted in $SAMPLE_RUNS. (The libmqx.so here is empty:
# the loader's complaint goes to the sample's log.)
cat > "$samples/run.sh" <<'EOF'
#!/bin/bash
build=$1 lib=$2 fail=0 total=0
mkdir -p "$LOGS"
echo "sample native mqx"
for s in $(cd "$SAMPLES" && ls -d */*); do
  name=$(basename "$s") total=$((total + 1)) r=0
  echo "$name" >> "$SAMPLE_RUNS"
  "$build/$name/$name" > "$LOGS/$name.native.log" 2>&1 || exit 9
  LD_PRELOAD=$lib "$build/$name/$name" > "$LOGS/$name.mqx.log" 2>&1 || { r=$?; fail=$((fail + 1)); }
  echo "$name 0 $r"
done
echo "samples $total, not built 0, failing natively 0, passing natively but failing under mqx: $fail"
EOF

if [ "$case" = no_gpu ]; then
  printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' > "$scratch/bin/nvidia-smi"
else
  printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"\n' > "$scratch/bin/nvidia-smi"
fi
chmod +x "$scratch/bin/nvidia-smi"

environment=(-u MQX_BUILD_DIR -u FAKE_GPU -u FAKE_FAIL -u FAKE_SLOW -u TEST_PROGRESS_SECONDS PATH="$scratch/bin:$PATH" MQX_CUDA_SAMPLES="$samples" MQX_JOBS=2
             CUDA_SAMPLES_JOBS=3 SAMPLE_RUNS="$scratch/sample-runs")
case $case in
  no_gpu) ;;
  gpu_pass) environment+=(FAKE_GPU=1 FAKE_SLOW=1 TEST_PROGRESS_SECONDS=1) ;;
  gpu_failures) environment+=(FAKE_GPU=1 FAKE_FAIL=1) ;;
  *) fail "unknown case" ;;
esac
rc=0
(cd "$repo" && env "${environment[@]}" scripts/test) > "$scratch/out" 2>&1 || rc=$?
summary=$(sed -n '/^== scripts\/test summary ==$/,$p' "$scratch/out")
echo "scripts/test exited $rc; summary:"
sed 's/^/  | /' <<<"$summary"
[ -n "$summary" ] || { sed "s/^/  | /" "$scratch/out"; fail "no summary block"; }
expect() { # LINE-PREFIX TEXT
  grep -F -- "$1" <<<"$summary" | grep -qF -- "$2" || fail "expected a line '$1 ...$2...'"
}
expect_time() { # LINE-PREFIX: the line ends with its time (and how it ran)
  grep -F -- "$1" <<<"$summary" | grep -qE -- " in [0-9.]+ s( \(.*\))?$" || fail "expected a time at the end of '$1'"
}

runs=$(grep -c . "$repo/setup-runs" || true)
[ "$runs" = 1 ] || fail "the fixture ran $runs times, not once"
grep -qE '^build: +everything in [0-9.]+ s$' <<<"$summary" || fail "expected a line 'build: everything in N s'"
grep -qE '^total: +[0-9.]+ s$' <<<"$summary" || fail "expected a line 'total: N s'"
expect_time "ctest:"
# ctest's closing line, from the one run or the background one.
grep -qE '^[0-9]+% tests passed(, [0-9]+ tests? failed)? out of [0-9]+$' "$scratch/out" || fail "ctest's closing line is not shown"
if [ "$case" != no_gpu ]; then
  expect_time "GPU suite:"
  expect_time "cuda-samples:"
  # Each sample run once, by a run.sh of its own; the table in their order.
  [ "$(sort "$scratch/sample-runs" | paste -sd ' ')" = "s1 s2 s3" ] ||
    fail "expected each sample run once, got: $(paste -sd ' ' "$scratch/sample-runs")"
  [ "$(grep -E '^s[0-9] ' "$repo/build/test-logs/cuda-samples.log" | cut -d' ' -f1 | paste -sd ' ')" = "s1 s2 s3" ] ||
    fail "cuda-samples.log does not list s1 s2 s3 in order"
  [ -f "$repo/build/test-logs/cuda-samples/s2.native.log" ] || fail "no sample log in test-logs/cuda-samples"
fi

case $case in
  no_gpu)
    [ "$rc" = 0 ] || fail "expected exit 0, got $rc"
    expect "ctest:" "3 passed, 0 failed, 2 skipped (of 5)"
    expect "GPU suite:" "skipped: no GPU"
    expect "cuda-samples:" "skipped: no GPU"
    ;;
  gpu_pass)
    [ "$rc" = 0 ] || fail "expected exit 0, got $rc"
    expect "ctest:" "all but the GPU suite: 3 passed, 0 failed, 0 skipped (of 3)"
    expect "GPU suite:" "2 passed, 0 failed, 0 skipped (of 2)"
    expect "cuda-samples:" "3 of 3 pass natively and under libmqx.so"
    # The wait for the background ctest names what it waits for.
    grep -qE '^ +after [0-9]+ s still running: unit\.one$' "$scratch/out" ||
      fail "the wait for ctest did not name unit.one, still running"
    ;;
  gpu_failures)
    [ "$rc" = 1 ] || fail "expected exit 1, got $rc"
    expect "ctest:" "2 passed, 1 failed, 0 skipped (of 3), FAILED (ctest exit 8)"
    expect "GPU suite:" "1 passed, 1 failed, 0 skipped (of 2), FAILED"
    expect "cuda-samples:" "1 fail only under libmqx.so"
    expect "cuda-samples:" "FAILED"
    ;;
esac
echo "PASS ($case)"
