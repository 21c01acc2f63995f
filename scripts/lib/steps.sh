# Sourced by scripts/build, scripts/demo and scripts/test: a line when a step
# starts, a line with its time when it ends, and the build's progress.

# now: seconds since the epoch, with a fraction (EPOCHREALTIME's decimal
# separator follows the locale).
now() { echo "${EPOCHREALTIME/,/.}"; }

# seconds_since START: the seconds since START (from now), "0.4" under 10 s,
# whole seconds above.
seconds_since() {
  awk -v s="$1" -v e="$(now)" 'BEGIN { d = e - s; if (d < 10) printf "%.1f\n", d; else printf "%d\n", d + 0.5 }'
}

# step TEXT: says what starts now; step_done [WORD] then says how long it took
# ("    done in 12 s") and leaves the seconds in step_seconds.
step_start=
step_seconds=
step() {
  step_start=$(now)
  echo "==> $*"
}
step_done() {
  step_seconds=$(seconds_since "$step_start")
  echo "    ${1:-done} in $step_seconds s"
}

# build_progress LOG: shows the build output read on stdin (ninja's) and
# keeps all of it in LOG. Ninja's status lines ("[n/m] Building ...") overwrite
# one line on a terminal; elsewhere (CI, a pipe) one is printed at each further
# tenth of the build, after 30 s without one, and at the end. Other lines
# (errors, warnings, "ninja: no work to do.") are printed as they come.
build_progress() {
  local log=$1 line tty=0 columns=80 tenth=-1 total=0 printed=$SECONDS fd
  if [ -t 1 ]; then
    tty=1
    columns=$(tput cols 2>/dev/null || echo 80)
  fi
  exec {fd}>"$log"
  while IFS= read -r line; do
    printf '%s\n' "$line" >&"$fd"
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\  ]]; then
      local finished=${BASH_REMATCH[1]}
      if [ "${BASH_REMATCH[2]}" != "$total" ]; then
        total=${BASH_REMATCH[2]}
        tenth=-1
      fi
      if [ $tty = 1 ]; then
        printf '\r\033[K    %s' "${line:0:columns-5}"
      elif ((finished * 10 / total > tenth || SECONDS - printed >= 30 || finished == total)); then
        tenth=$((finished * 10 / total))
        printed=$SECONDS
        echo "    $line"
      fi
    else
      [ $tty = 0 ] || printf '\r\033[K'
      printf '%s\n' "$line"
    fi
  done
  [ $tty = 0 ] || printf '\r\033[K'
  exec {fd}>&-
}
