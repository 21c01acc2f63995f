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
# keeps all of it in LOG. Ninja's status lines ("[n/m] Building ...", with the
# build's time so far) overwrite one line on a terminal; elsewhere (CI, a
# pipe) one is printed at each further tenth of the build, at the end, and
# when 30 s passed since the last one (if none came, a line says that the
# build goes on). Other lines (errors, warnings, "ninja: no work to do.") are
# printed as they come.
build_progress() {
  local log=$1 line="" part tty=0 columns=80 wait=5 fd
  local tenth=-1 total=0 finished=0 last="" started=$SECONDS printed=$SECONDS
  if [ -t 1 ]; then
    tty=1 wait=1
    columns=$(tput cols 2>/dev/null || echo 80)
  fi
  # progress_show TEXT: the status line, in place or on a line of its own.
  progress_show() {
    if [ $tty = 1 ]; then
      printf '\r\033[K    %s' "${1:0:columns-5}"
    else
      echo "    $1"
    fi
    printed=$SECONDS
  }
  exec {fd}>"$log"
  while true; do
    if IFS= read -r -t "$wait" part; then
      line+=$part
    elif [ $? -gt 128 ]; then
      # Nothing came for a while (a long compile): keep what came of a line.
      line+=$part
      if [ -n "$last" ] && { [ $tty = 1 ] || ((SECONDS - printed >= 30)); }; then
        if [ $tty = 1 ]; then
          progress_show "$last ($((SECONDS - started)) s)"
        else
          progress_show "[$finished/$total] still building ($((SECONDS - started)) s)"
        fi
      fi
      continue
    else
      [ -n "$line$part" ] || break
      line+=$part
    fi
    printf '%s\n' "$line" >&"$fd"
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\  ]]; then
      finished=${BASH_REMATCH[1]}
      if [ "${BASH_REMATCH[2]}" != "$total" ]; then
        total=${BASH_REMATCH[2]}
        tenth=-1
      fi
      last=$line
      if [ $tty = 1 ] || ((finished * 10 / total > tenth || finished == total || SECONDS - printed >= 30)); then
        tenth=$((finished * 10 / total))
        progress_show "$line ($((SECONDS - started)) s)"
      fi
    else
      [ $tty = 0 ] || printf '\r\033[K'
      printf '%s\n' "$line"
    fi
    line=""
  done
  [ $tty = 0 ] || printf '\r\033[K'
  exec {fd}>&-
}
