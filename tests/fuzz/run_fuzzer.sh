#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: FUZZER CORPUS WORKDIR RUNS SECONDS.
# New inputs go to WORKDIR/corpus (the committed CORPUS is only read), a
# crashing input to WORKDIR/crash-*. Prints the number of inputs tried; fails
# when the fuzzer found a bug or tried nothing.
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3 runs=$4 seconds=$5
name=$(basename "$fuzzer")
mkdir -p "$work/corpus"
log="$work/fuzzer.log"
status=0
"$fuzzer" -runs="$runs" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$corpus" >"$log" 2>&1 || status=$?
tried=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
found=$(ls "$work/corpus" | wc -l)
echo "$name: ${tried:-0} inputs tried, $(ls "$corpus" | wc -l) seeds, $found new corpus units, exit $status"
if [ "$status" -ne 0 ]; then
  tail -n 60 "$log"
  ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null || true
  exit "$status"
fi
[ "${tried:-0}" -gt 0 ]
