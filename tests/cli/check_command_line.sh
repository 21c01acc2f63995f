#!/bin/sh
# check_command_line.sh PROGRAM VALUE_OPTION: the command-line contract of a
# program: --help prints the usage on stdout and exits 0; an unknown flag, a
# missing value and a bad value of VALUE_OPTION each print one line on stderr
# naming what is wrong and exit 2.
program=$1
value_option=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  sed 's/^/  stdout: /' "$scratch/stdout" >&2
  sed 's/^/  stderr: /' "$scratch/stderr" >&2
  failures=$((failures + 1))
}

run() {
  "$program" "$@" >"$scratch/stdout" 2>"$scratch/stderr" </dev/null
  status=$?
}

run --help
[ "$status" -eq 0 ] || fail "$program --help exited $status, not 0"
grep -q '^usage: ' "$scratch/stdout" || fail "$program --help printed no usage on stdout"

# expect_refused NAMED ARGUMENTS...: exit status 2 and one line naming NAMED.
expect_refused() {
  named=$1
  shift
  run "$@"
  [ "$status" -eq 2 ] || fail "$program $* exited $status, not 2"
  [ "$(wc -l <"$scratch/stderr")" -eq 1 ] || fail "$program $*: not one line on stderr"
  grep -qF -- "$named" "$scratch/stderr" || fail "$program $*: the error does not name $named"
}

expect_refused "'--no-such-flag'" --no-such-flag
expect_refused "'--no-such-flag'" "$value_option" 1 --no-such-flag
expect_refused "$value_option" "$value_option"
expect_refused "'abc'" "$value_option" abc
expect_refused "'-1'" "$value_option" -1

[ "$failures" -eq 0 ] && echo "$program: command line as documented"
exit "$failures"
