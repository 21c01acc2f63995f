#!/usr/bin/env bash
# A stand-in for nvidia-cuda-mps-control in the tests (a real process, no
# GPU): "-d" starts a control daemon in the background that creates the
# control pipe (and a pid file) in $CUDA_MPS_PIPE_DIRECTORY and serves it
# until it reads "quit", which removes both; without arguments it forwards
# its standard input to the control pipe, as the real client does.
set -u
pipes=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
control=$pipes/control
if [ "${1:-}" = "-d" ]; then
  mkdir -p "$pipes"
  if [ -p "$control" ]; then
    echo "An instance of this daemon is already running" >&2
    exit 1
  fi
  mkfifo "$control"
  (
    exec 3<>"$control" </dev/null >/dev/null 2>&1
    echo $BASHPID > "$pipes/nvidia-cuda-mps-control.pid"
    while read -r command <&3; do
      if [ "$command" = "quit" ]; then
        rm -f "$control" "$pipes/nvidia-cuda-mps-control.pid"
        exit 0
      fi
    done
  ) &
  # Returns once the daemon is serving, as the real -d does.
  for _ in $(seq 1 500); do
    [ -s "$pipes/nvidia-cuda-mps-control.pid" ] && exit 0
    sleep 0.01
  done
  exit 1
fi
if [ ! -p "$control" ]; then
  echo "Cannot find MPS control daemon process" >&2
  exit 1
fi
while read -r line; do
  echo "$line" > "$control"
done
