#!/usr/bin/env bash
# tests/daemon/gpu/run_gpu_daemon_check.sh BUILD OUT: on a GPU machine, mqxd
# with a node budget of CAPACITY_MIB and 2 then 4 concurrent queries under
# mqx-run, each with a footprint of 0.6 x the budget (so that together they
# need 1.2x and 2.4x it), against running them one by one; and the same
# queries natively (no mqx) at once with the footprint scaled to the real
# device. Writes results.txt to OUT; exit non-zero when a query under mqx
# failed.
set -uo pipefail
build=$1
out=$2
capacity_mib=${CAPACITY_MIB:-8192}
footprint=$((capacity_mib * 6 / 10))
query=$build/oversubscribe_query
export MQX_DAEMON_INSTANCE=gpucheck MQX_DAEMON_CAPACITY=${capacity_mib}MiB MQX_LOG_LEVEL=${MQX_LOG_LEVEL:-info}
export MQX_DAEMON_DEMAND_STATE_FILE=$out/demand MQX_DAEMON_EVICTION_TIMEOUT_MS=10000
results=$out/results.txt
say() { echo "$*" | tee -a "$results"; }
status=0

"$build/bin/mqxd" > "$out/mqxd.log" 2>&1 &
daemon=$!
sleep 1
say "device: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader)"
say "node budget ${capacity_mib} MiB, query footprint ${footprint} MiB each, passes 4"

run_set() { # N: N queries at once under mqx-run; prints seconds
  local n=$1 pids=() start end rc
  start=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    "$build/bin/mqx-run" --stats --name "q$i" -- "$query" "$footprint" 4 "$i" > "$out/mqx-$n-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; rc=$?
    say "  mqx-run $n at once, query $((i + 1)): exit $rc"
    [ "$rc" = 0 ] || status=1
  done
  end=$(date +%s.%N)
  say "  $n at once under mqx: $(awk "BEGIN{print $end - $start}") s"
}
run_serial() {
  local n=$1 start end
  start=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    "$build/bin/mqx-run" --name "s$i" -- "$query" "$footprint" 4 "$i" > "$out/serial-$n-$i.log" 2>&1 || status=1
  done
  end=$(date +%s.%N)
  say "  $n one by one under mqx: $(awk "BEGIN{print $end - $start}") s"
}
for n in 2 4; do
  run_set "$n"
  run_serial "$n"
done
# Cross-process eviction: every launch needs one whole 0.6 x budget buffer,
# so two such queries can only alternate by evicting each other's buffer.
big=$((capacity_mib * 6 / 10))
pids=()
start=$(date +%s.%N)
for i in 1 2; do
  "$build/bin/mqx-run" --name "big$i" -- "$query" "$big" 3 "$i" "$big" > "$out/mqx-big-$i.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?
  say "  one ${big} MiB buffer per launch, 2 at once under mqx: query $((i + 1)) exit $rc"
  [ "$rc" = 0 ] || status=1
done
end=$(date +%s.%N)
say "  2 at once with one buffer each: $(awk "BEGIN{print $end - $start}") s"
kill -TERM $daemon
wait $daemon
say "mqxd exit $? (log: mqxd.log)"
say "$(grep 'shutting down' "$out/mqxd.log")"

# Natively the same mix at the device's real size: each query 0.6 x device.
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n1)
native=$((total_mib * 6 / 10))
pids=()
for i in 1 2; do
  "$query" "$native" 1 "$i" > "$out/native-$i.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?
  say "  native, 2 at once with ${native} MiB each: query $((i + 1)) exit $rc $(tail -n1 "$out/native-$((i + 1)).log")"
done
# One file for every log (a device run brings back few files).
for log in "$out"/mqxd.log "$out"/mqx-*.log "$out"/serial-*.log "$out"/native-*.log; do
  echo "=== $(basename "$log")"
  cat "$log"
done > "$out/logs.txt"
rm -f "$out"/mqxd.log "$out"/mqx-*.log "$out"/serial-*.log "$out"/native-*.log
exit $status
