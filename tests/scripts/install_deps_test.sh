#!/usr/bin/env bash
# install_deps_test.sh CASE INSTALL_DEPS [SOURCE_DIR]: runs a copy of
# INSTALL_DEPS (scripts/install-deps) in a scratch tree (its own CMakeLists.txt
# from SOURCE_DIR, default INSTALL_DEPS/../.., and no .carry/ unless the case
# makes one) with a fake dpkg, apt-get and sudo first on PATH, so that nothing
# is ever installed for real. Cases:
#   fake_package_manager  dpkg and apt-get know no package, every real command
#                         is there: exit 0, nothing installed
#   no_cmake              PATH without cmake: exit 3, one line naming cmake
#   old_cmake             a cmake older than CMakeLists.txt's minimum: exit 3,
#                         one line naming cmake, the minimum and what was found
#   no_header             include dirs without toml++: exit 3, one line naming toml++
#   carried_header        the same, with toml++ in the scratch .carry/include: exit 0
#   no_json_header        include dirs without nlohmann/json: exit 3, one line
#                         naming nlohmann/json and its package
#   installs_only_missing PATH without cmake, an apt-get that installs it:
#                         exit 0 after asking apt-get for cmake alone (root only,
#                         as install-deps asks apt-get only as root; else skipped)
# Needs a machine that meets every need (CI after scripts/install-deps).
set -euo pipefail
case=${1:?case}
install_deps=$(realpath "${2:?path to scripts/install-deps}")
source_dir=$(realpath "${3:-$(dirname "$install_deps")/..}")

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL ($case): $*" >&2; exit 1; }

repo=$scratch/repo
mkdir -p "$repo/scripts"
cp "$install_deps" "$repo/scripts/install-deps"
cp "$source_dir/CMakeLists.txt" "$repo/CMakeLists.txt"

# A GPU host without a package registry meets the header-only needs through
# the checkout's .carry/ (tools/prepare-carry): the scratch tree gets links to
# what it holds, except the header folder the case takes away (toml++ for
# no_header and carried_header, which bring it themselves, nlohmann for
# no_json_header).
case $case in
  no_json_header) taken=nlohmann ;;
  *) taken=toml++ ;;
esac
if [ -d "$source_dir/.carry" ]; then
  mkdir -p "$repo/.carry/include"
  for entry in "$source_dir/.carry/include"/*; do
    [ -e "$entry" ] && [ "$(basename "$entry")" != "$taken" ] && ln -s "$entry" "$repo/.carry/include/"
  done
  [ -d "$source_dir/.carry/gtest" ] && ln -s "$source_dir/.carry/gtest" "$repo/.carry/gtest"
fi
if [ "$taken" = toml++ ] && [ "$case" != no_header ] && [ "$case" != carried_header ] &&
  [ -e "$source_dir/.carry/include/toml++" ]; then
  ln -s "$source_dir/.carry/include/toml++" "$repo/.carry/include/toml++"
fi

# The fakes log every call to $scratch/calls.log.
fake=$scratch/fake
mkdir -p "$fake"
cat > "$fake/dpkg" <<EOF
#!/bin/sh
echo "dpkg \$*" >> "$scratch/calls.log"
echo "dpkg-query: package '\$2' is not installed and no information is available" >&2
exit 1
EOF
# apt-get: update succeeds; install knows no package, except that with
# FAKE_APT_INSTALLS_CMAKE set it "installs" cmake into FAKE_APT_BIN.
cat > "$fake/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >> "$scratch/calls.log"
[ "\$1" = update ] && exit 0
status=0
for argument in "\$@"; do
  case \$argument in
    -*|install) ;;
    cmake) if [ -n "\${FAKE_APT_INSTALLS_CMAKE:-}" ]; then ln -s "\$FAKE_APT_INSTALLS_CMAKE" "\$FAKE_APT_BIN/cmake"; else echo "E: Unable to locate package \$argument" >&2; status=100; fi ;;
    *) echo "E: Unable to locate package \$argument" >&2; status=100 ;;
  esac
done
exit \$status
EOF
# sudo keeps PATH (the real one would reset it and run the real apt-get).
printf '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n' > "$fake/sudo"
chmod +x "$fake"/*
: > "$scratch/calls.log"

# path_without NAME: a folder of links to the commands install-deps and the
# fakes use (as PATH finds them), NAME left out. Only these: linking all of
# PATH (3000 names) takes seconds on a busy machine.
commands=(bash sh env sed grep sort head tail tr cat dirname id ln rm mkdir timeout python3 c++ g++ gcc cc ninja cmake)
path_without() {
  local bin=$scratch/bin name target
  mkdir -p "$bin"
  for name in "${commands[@]}"; do
    [ "$name" = "$1" ] && continue
    target=$(command -v "$name") || continue
    if [ "$name" = python3 ]; then
      # Called by its own path, not through a link: a virtual environment's
      # python3 (the GPU host's, which has pybind11 and pytest) finds its
      # pyvenv.cfg beside the path it was called by, and through a link here
      # it would be the bare base interpreter.
      printf '#!/bin/sh\nexec "%s" "$@"\n' "$target" > "$bin/$name"
      chmod +x "$bin/$name"
      continue
    fi
    ln -s "$target" "$bin/$name"
  done
  echo "$bin"
}

# include_dirs_without HEADER_DIR: the compiler's include search list, each
# folder that holds HEADER_DIR replaced by a folder of links to all else.
include_dirs_without() {
  local list="" dir n=0 mirror
  while read -r dir; do
    if [ -e "$dir/$1" ]; then
      n=$((n + 1))
      mirror=$scratch/include$n
      mkdir -p "$mirror"
      ln -s "$dir"/* "$mirror"/
      rm "$mirror/$1"
      dir=$mirror
    fi
    list=${list:+$list:}$dir
  done < <(c++ -xc++ -E -v /dev/null 2>&1 >/dev/null |
           sed -n '/^#include <...> search starts here:/,/^End of search list\./p' | sed -n 's/^ //p')
  echo "$list"
}

# run_install_deps [VAR=value...]: runs the copy with the fakes first on PATH;
# sets rc, and out/err (its stdout and stderr).
run_install_deps() {
  rc=0
  # XDG_CACHE_HOME: a failed optional install is remembered there, not in $HOME.
  # MQX_DEPS_SKIP_OPTIONAL: Slurm and munge, optional, are not these cases'
  # business (a machine without them would ask apt-get for them).
  env XDG_CACHE_HOME="$scratch/cache" MQX_DEPS_SKIP_OPTIONAL=1 "$@" "$repo/scripts/install-deps" > "$scratch/out" 2> "$scratch/err" || rc=$?
  err=$(cat "$scratch/err")
  echo "install-deps exited $rc; stderr:"
  sed 's/^/  | /' "$scratch/err"
  echo "calls of the fake package manager:"
  sed 's/^/  | /' "$scratch/calls.log"
  # A command missing from a scratch PATH would pass unnoticed otherwise.
  ! grep -qE 'command not found|No such file' <<<"$err" || fail "install-deps hit a missing command"
}

# expect_one_missing_line WORD: exactly one "missing" line, naming WORD.
expect_one_missing_line() {
  local lines
  lines=$(grep -c '^install-deps: missing ' <<<"$err" || true)
  [ "$lines" = 1 ] || fail "expected one line 'install-deps: missing ...', got $lines"
  grep '^install-deps: missing ' <<<"$err" | grep -qF -- "$1" || fail "the missing line does not name $1"
}

case $case in
  fake_package_manager)
    run_install_deps PATH="$fake:$PATH"
    [ "$rc" = 0 ] || fail "expected exit 0 with every need met, got $rc"
    ! grep -q '^apt-get install' "$scratch/calls.log" || fail "apt-get install was called although nothing is missing"
    ;;
  no_cmake)
    bin=$(path_without cmake)
    [ ! -e "$bin/cmake" ] && [ ! -e "$fake/cmake" ] || fail "scratch PATH still has cmake"
    run_install_deps PATH="$fake:$bin"
    [ "$rc" = 3 ] || fail "expected exit 3 (a need missing), got $rc"
    expect_one_missing_line cmake
    ;;
  old_cmake)
    bin=$(path_without cmake)
    printf '#!/bin/sh\necho "cmake version 3.10.2"\n' > "$bin/cmake"
    chmod +x "$bin/cmake"
    minimum=$(sed -nE 's/^cmake_minimum_required\(VERSION ([0-9.]+).*/\1/p' "$repo/CMakeLists.txt")
    run_install_deps PATH="$fake:$bin"
    [ "$rc" = 3 ] || fail "expected exit 3 (cmake too old), got $rc"
    expect_one_missing_line "cmake >= $minimum (found cmake 3.10.2"
    ;;
  no_header)
    dirs=$(include_dirs_without toml++)
    run_install_deps PATH="$fake:$PATH" MQX_DEPS_INCLUDE_DIRS="$dirs"
    [ "$rc" = 3 ] || fail "expected exit 3 (a need missing), got $rc"
    expect_one_missing_line toml++
    ;;
  no_json_header)
    dirs=$(include_dirs_without nlohmann)
    run_install_deps PATH="$fake:$PATH" MQX_DEPS_INCLUDE_DIRS="$dirs"
    [ "$rc" = 3 ] || fail "expected exit 3 (nlohmann/json missing), got $rc"
    expect_one_missing_line "nlohmann/json headers (nlohmann/json.hpp): apt-get install nlohmann-json3-dev"
    ;;
  carried_header)
    dirs=$(include_dirs_without toml++)
    real=$(c++ -xc++ -E -v /dev/null 2>&1 >/dev/null | sed -n 's/^ //p' | while read -r d; do
             [ -d "$d/toml++" ] && { echo "$d/toml++"; break; }; done || true)
    [ -n "$real" ] || [ ! -d "$source_dir/.carry/include/toml++" ] || real=$source_dir/.carry/include/toml++
    [ -n "$real" ] || fail "no toml++ headers on this machine to carry"
    mkdir -p "$repo/.carry/include"
    ln -s "$(realpath "$real")" "$repo/.carry/include/toml++"
    run_install_deps PATH="$fake:$PATH" MQX_DEPS_INCLUDE_DIRS="$dirs"
    [ "$rc" = 0 ] || fail "expected exit 0 with toml++ in .carry/include, got $rc"
    ! grep -q '^apt-get install' "$scratch/calls.log" || fail "apt-get install was called although .carry/include has toml++"
    ;;
  installs_only_missing)
    if [ "$(id -u)" != 0 ]; then
      echo "skipped: install-deps asks apt-get only as root"
      exit 77
    fi
    real_cmake=$(command -v cmake)
    bin=$(path_without cmake)
    run_install_deps PATH="$fake:$bin" FAKE_APT_INSTALLS_CMAKE="$real_cmake" FAKE_APT_BIN="$bin"
    [ "$rc" = 0 ] || fail "expected exit 0 once apt-get installed cmake, got $rc"
    installs=$(grep '^apt-get install' "$scratch/calls.log" || true)
    [ "$(sed 's/ -[^ ]*//g' <<<"$installs")" = "apt-get install cmake" ] ||
      fail "expected one 'apt-get install ... cmake', got: $installs"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS ($case)"
