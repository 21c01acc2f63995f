#!/usr/bin/env bash
# package_test.sh BUILD_DIR: `cpack -G DEB` makes the .deb; its control names
# the package, version and dependencies; unpacked into a scratch root
# (dpkg -x, nothing installed on this machine) its mqxd and mqx-run print
# their version and mqx-run runs a program. Issue 18. Skips (77) without
# dpkg-deb.
set -uo pipefail
source "$(dirname "$0")/sim_query.sh"
build=$(realpath "${1:?build folder}")
command -v dpkg-deb > /dev/null || { echo "skipped: no dpkg-deb"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$scratch" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$scratch/out") > "$scratch/cpack.log" 2>&1 ||
  { tail -n 30 "$scratch/cpack.log"; fail "cpack -G DEB"; }
package=$(ls "$scratch"/out/mqx_*.deb 2>/dev/null | head -n1)
[ -n "$package" ] || { cat "$scratch/cpack.log"; fail "no mqx_*.deb"; }
control=$(dpkg-deb -f "$package")
grep -q '^Package: mqx$' <<<"$control" || fail "control: $control"
grep -q '^Version: [0-9]' <<<"$control" || fail "no version: $control"
grep -q '^Depends: .*libc6' <<<"$control" || fail "no dependencies: $control"

dpkg -x "$package" "$scratch/root" || fail "dpkg -x"
for path in usr/bin/mqxd usr/bin/mqx-run usr/lib/libmqx_advice.so usr/include/mqx/advice.h etc/mqx/mqx.toml \
            usr/lib/systemd/user/mqxd.service usr/bin/mqx-sbatch usr/bin/mqx-srun usr/share/mqx/slurm/prolog \
            usr/share/mqx/slurm/task-prolog; do
  [ -e "$scratch/root/$path" ] || fail "not in the package: $path"
done
[ ! -e "$scratch/root/usr/etc" ] || fail "configuration under /usr/etc: Debian's is in /etc"
# The configuration is a conffile: an upgrade keeps an administrator's changes.
dpkg-deb -e "$package" "$scratch/control" || fail "dpkg-deb -e"
grep -qx /etc/mqx/mqx.toml "$scratch/control/conffiles" 2> /dev/null || fail "/etc/mqx/mqx.toml is no conffile"
unit=$scratch/root/usr/lib/systemd/user/mqxd.service
grep -qx "Environment=MQX_CONFIG=/etc/mqx/mqx.toml" "$unit" || fail "the unit reads $(grep MQX_CONFIG "$unit")"
grep -qx "ExecStart=/usr/bin/mqxd" "$unit" || fail "the unit starts $(grep ExecStart "$unit")"
# The Python package, where the build has it, in Debian's dist-packages.
python=$(sed -n 's/^MQX_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
if ls "$build"/python/mqx/_mqx*.so > /dev/null 2>&1; then
  site=$scratch/root/usr/lib/python3/dist-packages
  bin_dir=$(cd "$scratch" && PYTHONPATH=$site "$python" -c 'import mqx, mqx._installed as i; print(i.BIN_DIR)') ||
    fail "import mqx from the package's $site"
  [ "$bin_dir" = /usr/bin ] || fail "the packaged mqx names $bin_dir for its programs, not /usr/bin"
fi
version=$("$scratch/root/usr/bin/mqxd" --version) || fail "the packaged mqxd --version exited $?"
out=$(MQX_DAEMON_INSTANCE="package-test-$$" "$scratch/root/usr/bin/mqx-run" --allow-no-daemon -- /bin/echo packaged-run 2>&1) ||
  fail "the packaged mqx-run exited $?: $out"
grep -q packaged-run <<<"$out" || fail "the packaged mqx-run did not run the program: $out"
run_sim_query "$scratch/root/usr/bin" "$build" || fail "a query on the simulated device under the packaged programs"
echo "PASS: $(basename "$package"): $version; $(grep '^Depends:' <<<"$control")"
