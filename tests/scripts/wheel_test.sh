#!/usr/bin/env bash
# wheel_test.sh SOURCE_DIR [BUILD_DIR]: `pip wheel ./python` makes a wheel of the Python
# package (its extension, mqxd and mqx-run inside, built by setup.py through
# CMake); installed into a fresh venv (nothing installed on this machine) it
# imports, `python -m mqx --version` names the same version and commit as
# the wheel's own mqxd, and the wheel's mqx-run runs a program, and a query
# on the simulated device (BUILD_DIR's mqx_sim_client) under the wheel's
# mqxd and mqx-run. Issue 18.
# Building a wheel offline needs a Python with setuptools and `wheel` (or
# setuptools 70.1+, which has bdist_wheel): the first of $MQX_WHEEL_PYTHON,
# python3, /usr/bin/python3 that has them is used; skips (77) when none has.
set -uo pipefail
source "$(dirname "$(realpath "$0")")/sim_query.sh"
source_dir=$(realpath "${1:?source folder}")
build=$(realpath "${2:-$source_dir/build}")
fail() { echo "FAIL: $*" >&2; exit 1; }

python=
for candidate in ${MQX_WHEEL_PYTHON:-} python3 /usr/bin/python3; do
  command -v "$candidate" > /dev/null || continue
  if "$candidate" - <<'PY' 2> /dev/null; then
import importlib.util, sys
import setuptools, venv  # noqa: F401
major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
has_bdist_wheel = (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None
sys.exit(0 if has_bdist_wheel and importlib.util.find_spec("pip") is not None else 1)
PY
    python=$candidate
    break
  fi
done
[ -n "$python" ] || { echo "skipped: no Python here has setuptools, wheel (or setuptools 70.1+), pip and venv"; exit 77; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# A copy of the package folder is built: pip builds in place and would leave
# build/ and mqx.egg-info in the checkout. setup.py is told where the
# repository is.
cp -r "$source_dir/python" "$scratch/python"
export MQX_PIP_SOURCE_DIR=$source_dir
export MQX_PIP_BUILD_DIR=${MQX_WHEEL_BUILD_DIR:-$scratch/cmake} MQX_PIP_JOBS=${MQX_PIP_JOBS:-2}
"$python" -m pip wheel --no-build-isolation --no-deps --no-index "$scratch/python" -w "$scratch/dist" \
  > "$scratch/wheel.log" 2>&1 || { tail -n 40 "$scratch/wheel.log"; fail "pip wheel ./python (with $python)"; }
wheel=$(ls "$scratch"/dist/mqx-*.whl 2> /dev/null | head -n1)
[ -n "$wheel" ] || { tail -n 20 "$scratch/wheel.log"; fail "no mqx-*.whl"; }

"$python" -m venv "$scratch/venv" || fail "python -m venv"
"$scratch/venv/bin/python" -m pip install --no-index --no-deps "$wheel" > "$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log"; fail "pip install of the wheel into a fresh venv"; }

cd "$scratch" # nothing of the checkout on sys.path
installed=$("$scratch/venv/bin/python" -c 'import mqx, os; print(os.path.dirname(mqx.__file__))') ||
  fail "import mqx from the installed wheel"
case "$installed" in "$scratch/venv/"*) ;; *) fail "mqx imported from $installed, not from the venv" ;; esac
python_version=$("$scratch/venv/bin/python" -m mqx --version) || fail "python -m mqx --version exited $?"
mqxd_version=$("$installed/bin/mqxd" --version) || fail "the wheel's mqxd --version exited $?"
[ "${python_version#python -m mqx }" = "${mqxd_version#mqxd }" ] ||
  fail "versions differ: '$python_version' and '$mqxd_version'"
out=$(MQX_DAEMON_INSTANCE="wheel-test-$$" "$installed/bin/mqx-run" --allow-no-daemon -- /bin/echo wheel-run 2>&1) ||
  fail "the wheel's mqx-run exited $?: $out"
grep -q wheel-run <<<"$out" || fail "the wheel's mqx-run did not run the program: $out"
found=$("$scratch/venv/bin/python" -c 'import mqx.binaries as b; print(b.find_binary("mqxd"))') || fail "mqx.binaries"
[ "$found" = "$installed/bin/mqxd" ] || fail "mqx.binaries found $found, not the wheel's mqxd"
run_sim_query "$installed/bin" "$build" || fail "a query on the simulated device under the wheel's programs"
echo "PASS: $(basename "$wheel") (built with $python): $python_version"
