#!/usr/bin/env bash
# install_test.sh BUILD_DIR: `cmake --install BUILD_DIR --prefix SCRATCH`
# lays out bin/, lib/, include/, etc/mqx/ and the package config; the
# installed mqxd and mqx-run print the same version and commit; a consumer
# project finds the advice API with find_package(mqx) and links mqx::advice;
# its program runs (a no-op without libmqx), and a query under the installed
# mqx-run runs with --allow-no-daemon. Issue 18.
set -uo pipefail
source "$(dirname "$0")/sim_query.sh"
build=$(realpath "${1:?build folder}")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$scratch/prefix

cmake --install "$build" --prefix "$prefix" > "$scratch/install.log" 2>&1 || { cat "$scratch/install.log"; fail "cmake --install"; }
for path in bin/mqxd bin/mqx-run lib/libmqx_advice.so include/mqx/advice.h etc/mqx/mqx.toml \
            lib/cmake/mqx/mqxConfig.cmake lib/cmake/mqx/mqxConfigVersion.cmake share/doc/mqx/README.md \
            lib/systemd/user/mqxd.service bin/mqx-sbatch bin/mqx-srun share/mqx/slurm/prolog share/mqx/slurm/task-prolog \
            share/mqx/slurm/slurm-mqx.conf.in; do
  [ -e "$prefix/$path" ] || fail "not installed: $path"
done
if [ -e "$build/lib/libmqx.so" ]; then
  [ -e "$prefix/lib/libmqx.so" ] || fail "libmqx.so was built but not installed"
fi
cmp -s "$prefix/etc/mqx/mqx.toml" "$(dirname "$0")/../../configs/default.toml" || fail "etc/mqx/mqx.toml is not configs/default.toml"

daemon_version=$("$prefix/bin/mqxd" --version) || fail "mqxd --version exited $?"
run_version=$("$prefix/bin/mqx-run" --version) || fail "mqx-run --version exited $?"
[[ $daemon_version =~ ^mqxd\ ([0-9.]+\ \(commit\ [^\)]+\))$ ]] || fail "mqxd --version: '$daemon_version'"
[ "${daemon_version#mqxd }" = "${run_version#mqx-run }" ] || fail "versions differ: '$daemon_version' / '$run_version'"

# The systemd user unit names the installed mqxd and configuration, restarts
# on failure and is wanted by default.target; systemd-analyze checks it where
# it can (not in a container without systemd).
unit=$prefix/lib/systemd/user/mqxd.service
grep -qx "ExecStart=$prefix/bin/mqxd" "$unit" || fail "the unit does not start $prefix/bin/mqxd: $(grep ExecStart "$unit")"
grep -qx "Environment=MQX_CONFIG=$prefix/etc/mqx/mqx.toml" "$unit" || fail "the unit does not read $prefix/etc/mqx/mqx.toml"
grep -qx "Restart=on-failure" "$unit" || fail "the unit does not restart on failure"
grep -qx "WantedBy=default.target" "$unit" || fail "the unit is not wanted by default.target"
for section in Unit Service Install; do grep -qx "\[$section\]" "$unit" || fail "the unit has no [$section]"; done
if command -v systemd-analyze > /dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemd-analyze verify --user "$unit" || fail "systemd-analyze verify refused the unit"
fi

# A consumer project of the installed tree.
mkdir -p "$scratch/consumer"
cat > "$scratch/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(mqx 0.1 REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE mqx::advice)
CMAKE
cat > "$scratch/consumer/main.c" <<'C'
#include <mqx/advice.h>
#include <stdio.h>
int main(void) {
  static char buffer[64];
  /* Without libmqx preloaded the advice API is a no-op that reports success. */
  int status = cudaAdvice(buffer, MQX_ADVICE_INPUT);
  printf("advice %d\n", status);
  return status;
}
C
cmake -S "$scratch/consumer" -B "$scratch/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$scratch/consumer.log" 2>&1 &&
  cmake --build "$scratch/consumer/build" >> "$scratch/consumer.log" 2>&1 || { cat "$scratch/consumer.log"; fail "the consumer project did not build"; }
"$scratch/consumer/build/consumer" > "$scratch/consumer.out" 2>&1 || { cat "$scratch/consumer.out"; fail "the consumer exited $?"; }
grep -q '^advice ' "$scratch/consumer.out" || fail "the consumer printed: $(cat "$scratch/consumer.out")"

# The installed mqx-run runs a program (no daemon: --allow-no-daemon).
out=$(MQX_DAEMON_INSTANCE="install-test-$$" "$prefix/bin/mqx-run" --allow-no-daemon -- /bin/echo installed-run 2>&1) ||
  fail "mqx-run --allow-no-daemon exited $?: $out"
grep -q installed-run <<<"$out" || fail "mqx-run did not run the program: $out"
# The installed programs read the installed configuration with no MQX_CONFIG:
# a key broken on purpose there stops mqx-run with a line naming the file.
cp "$prefix/etc/mqx/mqx.toml" "$scratch/mqx.toml.saved"
printf '[no_such_section]\nkey = 1\n' >> "$prefix/etc/mqx/mqx.toml"
if out=$(env -u MQX_CONFIG MQX_DAEMON_INSTANCE="install-test-$$" "$prefix/bin/mqx-run" --allow-no-daemon -- /bin/true 2>&1); then
  fail "mqx-run ignored the installed configuration $prefix/etc/mqx/mqx.toml: $out"
fi
grep -q "no_such_section.*$prefix/etc/mqx/mqx.toml" <<<"$out" || fail "the error does not name the installed file: $out"
cp "$scratch/mqx.toml.saved" "$prefix/etc/mqx/mqx.toml"

# The Python package, where the build has it: it imports from the installed
# tree alone, finds the installed programs (not the build's) and names the
# same version.
python=$(sed -n 's/^MQX_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
if ls "$build"/python/mqx/_mqx*.so > /dev/null 2>&1; then
  site=$prefix/lib/python3/dist-packages
  ls "$site"/mqx/_mqx*.so > /dev/null 2>&1 || fail "the Python module was built but not installed under $site"
  [ ! -e "$site/mqx/__pycache__" ] || fail "__pycache__ was installed"
  found=$(cd "$scratch" && PYTHONPATH=$site "$python" -c 'import mqx.binaries as b; print(b.find_binary("mqxd"))') ||
    fail "import mqx from $site"
  [ "$found" = "$prefix/bin/mqxd" ] || fail "the installed package finds $found, not $prefix/bin/mqxd"
  python_version=$(cd "$scratch" && PYTHONPATH=$site "$python" -m mqx --version) || fail "python -m mqx --version exited $?"
  [ "${python_version#python -m mqx }" = "${daemon_version#mqxd }" ] ||
    fail "versions differ: '$python_version' / '$daemon_version'"
fi
run_sim_query "$prefix/bin" "$build" || fail "a query on the simulated device under the installed programs"
echo "PASS: installed into $prefix; $daemon_version"
