#!/usr/bin/env bash
# test_summary_test.sh CASE SCRIPTS_TEST: runs a copy of SCRIPTS_TEST
# (scripts/test) in a scratch tree whose scripts/build does nothing and whose
# build/ holds a hand-written ctest file (two tests, two labelled gpu), a fake
# nvidia-smi first on PATH and a fake cuda-samples folder (run.sh from
# ../shared/cuda-samples' interface: its summary line), so that the GPU
# branches are exercised on a machine without a GPU. Cases:
#   no_gpu        nvidia-smi lists none: one ctest run, GPU parts "skipped: no GPU", exit 0
#   gpu_pass      a GPU: GPU suite and cuda-samples counted in the summary, exit 0
#   gpu_failures  a GPU test fails and a sample fails under libmqx.so only: exit 1
set -euo pipefail
case=${1:?case}
scripts_test=$(realpath "${2:?path to scripts/test}")

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL ($case): $*" >&2; exit 1; }

repo=$scratch/repo
mkdir -p "$repo/scripts" "$repo/build/lib" "$repo/build/tests/gpu" "$scratch/bin"
cp "$scripts_test" "$repo/scripts/test"
mkdir -p "$repo/tools"
cp "$(dirname "$scripts_test")/../tools/select-samples" "$repo/tools/select-samples"
printf '#!/bin/sh\nexit 0\n' > "$repo/scripts/build"
printf '#!/bin/sh\nexit 0\n' > "$repo/build/tests/gpu/mqx_gpu_probe"
chmod +x "$repo/scripts/build" "$repo/build/tests/gpu/mqx_gpu_probe"
touch "$repo/build/lib/libmqx.so" "$repo/build/CMakeCache.txt"
# FAKE_FAIL makes gpu.two fail (without a GPU it skips, as the suite does).
cat > "$repo/build/CTestTestfile.cmake" <<'EOF'
add_test(unit.one "true")
set_tests_properties(unit.one PROPERTIES LABELS "unit")
add_test(unit.two "true")
set_tests_properties(unit.two PROPERTIES LABELS "unit")
add_test(gpu.one "sh" "-c" "[ -n \"$FAKE_GPU\" ] || exit 77")
set_tests_properties(gpu.one PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
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
# run.sh's interface: BUILD LIBMQX LIMIT, one line per sample, then its summary.
cat > "$samples/run.sh" <<'EOF'
#!/bin/bash
build=$1 lib=$2 fail=0
for name in s1 s2 s3; do
  "$build/$name/$name" || exit 9
  LD_PRELOAD=$lib "$build/$name/$name" || fail=$((fail + 1))
done
echo "samples 3, not built 0, failing natively 0, passing natively but failing under mqx: $fail"
EOF

if [ "$case" = no_gpu ]; then
  printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' > "$scratch/bin/nvidia-smi"
else
  printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"\n' > "$scratch/bin/nvidia-smi"
fi
chmod +x "$scratch/bin/nvidia-smi"

environment=(-u MQX_BUILD_DIR -u FAKE_GPU -u FAKE_FAIL PATH="$scratch/bin:$PATH" MQX_CUDA_SAMPLES="$samples" MQX_JOBS=2)
case $case in
  no_gpu) ;;
  gpu_pass) environment+=(FAKE_GPU=1) ;;
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

case $case in
  no_gpu)
    [ "$rc" = 0 ] || fail "expected exit 0, got $rc"
    expect "ctest:" "2 passed, 0 failed, 2 skipped (of 4)"
    expect "GPU suite:" "skipped: no GPU"
    expect "cuda-samples:" "skipped: no GPU"
    ;;
  gpu_pass)
    [ "$rc" = 0 ] || fail "expected exit 0, got $rc"
    expect "ctest:" "2 passed, 0 failed, 0 skipped (of 2)"
    expect "GPU suite:" "2 passed, 0 failed, 0 skipped (of 2)"
    expect "cuda-samples:" "3 of 3 pass natively and under libmqx.so"
    ;;
  gpu_failures)
    [ "$rc" = 1 ] || fail "expected exit 1, got $rc"
    expect "GPU suite:" "1 passed, 1 failed, 0 skipped (of 2), FAILED"
    expect "cuda-samples:" "1 fail only under libmqx.so"
    expect "cuda-samples:" "FAILED"
    ;;
esac
echo "PASS ($case)"
