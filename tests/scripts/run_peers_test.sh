#!/usr/bin/env bash
# run_peers_test.sh RUN_PEERS: bench/peers/run-peers without PyTorch or a GPU
# (an interpreter that cannot start one) says why, writes a JSON that says
# skipped, and exits 0; bad arguments exit 2 naming them.
set -uo pipefail
run_peers=${1:?path to bench/peers/run-peers}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$run_peers" --python false --out "$scratch/peers.json" 2>&1) || fail "exit $? without PyTorch: $out"
grep -q '^run-peers: skipped: ' <<<"$out" || fail "no 'skipped' line: $out"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["skipped"] and r["commit"], r' "$scratch/peers.json" ||
  fail "the JSON does not say skipped"

# mqxd-pool (mqxd lending host blocks) is a system like the others.
out=$("$run_peers" --python false --systems mqx,mqxd,mqxd-pool --out "$scratch/pool.json" 2>&1) ||
  fail "--systems mqxd-pool refused: exit $?: $out"
err=$("$run_peers" --systems native,bogus --out "$scratch/x.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "unknown system 'bogus'" <<<"$err" || fail "--systems bogus: exit $rc, $err"
err=$("$run_peers" --fractions 0.5,abc --out "$scratch/x.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "fractions" <<<"$err" || fail "--fractions abc: exit $rc, $err"
err=$("$run_peers" --workloads matrix,bogus --out "$scratch/x.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "unknown workload" <<<"$err" || fail "--workloads bogus: exit $rc, $err"
err=$("$run_peers" --reserve-gib -1 --out "$scratch/x.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "reserve-gib" <<<"$err" || fail "--reserve-gib -1: exit $rc, $err"
err=$("$run_peers" --training-steps 0 --out "$scratch/x.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "training-steps" <<<"$err" || fail "--training-steps 0: exit $rc, $err"
err=$("$run_peers" --pair-fraction -0.5 --out "$scratch/x.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "pair-fraction" <<<"$err" || fail "--pair-fraction -0.5: exit $rc, $err"

# --summarize: limits, ratios and checksum agreement added to an earlier run's
# JSON (a run cut short keeps its runs), the table printed.
cat > "$scratch/earlier.json" <<'JSON'
{"benchmark": "run-peers", "commit": "abc1234", "date": "2026-11-26", "device": "sim", "device_bytes": 17179869184,
 "mqx_limit_bytes": 16106127360, "h2d_pinned_GBps": 50.0, "d2h_pinned_GBps": 50.0, "steps": 10,
 "systems": ["native", "mqx"],
 "workloads": {"matrix": {"runs": [
  {"fraction": 0.9, "footprint_bytes": 15461882265,
   "native": {"status": "ok", "tensors": 230, "steps": 10, "fill_s": 0.2, "steps_s": 1.0, "total_s": 1.5, "checksum": 1.5},
   "mqx": {"status": "ok", "tensors": 230, "steps": 10, "fill_s": 0.2, "steps_s": 1.0, "total_s": 1.6, "checksum": 1.5,
           "mqx_statistics": {"fence_waits": 30, "bytes_written_back": 2000000000, "bytes_dropped_clean": 1000000000,
                              "fence_waits_to_remap": 20, "fence_wait_ns": 1500000000}}},
  {"fraction": 1.5, "footprint_bytes": 25769803776,
   "native": {"status": "out of memory"},
   "mqx": {"status": "stopped"}}]}}}
JSON
out=$("$run_peers" --summarize "$scratch/earlier.json" --out "$scratch/summary.json" 2>&1) || fail "--summarize: exit $?: $out"
grep -q "agree" <<<"$out" || fail "--summarize printed no table: $out"
python3 - "$scratch/summary.json" <<'PY' || fail "--summarize wrote no limits or ratios"
import json, sys
rows = json.load(open(sys.argv[1]))["workloads"]["matrix"]["runs"]
assert rows[0]["checksums_agree"] and abs(rows[0]["ratios"]["mqx_vs_native"] - 1.6 / 1.5) < 1e-9, rows[0]
assert rows[1]["limit"]["limit_s"] > rows[0]["limit"]["limit_s"] > 0, rows
# Drains per GB that left the device: 30 fence waits over 2 GB written back and 1 GB dropped clean.
assert abs(rows[0]["drains"]["mqx"]["fence_waits_per_GB"] - 10.0) < 1e-9, rows[0]["drains"]
# Which of them waited to remap a page on its host block, and for how long all waited.
assert rows[0]["drains"]["mqx"]["fence_waits_to_remap"] == 20 and rows[0]["drains"]["mqx"]["fence_wait_s"] == 1.5
PY
grep -q "30 fence waits, 10.0/GB evicted (20 to remap, 1.50 s waited)" <<<"$out" ||
  fail "--summarize printed no drains per GB: $out"
# The systems under mqxd, and Unified Memory: each managed one gets its ratio and its drains.
cat > "$scratch/daemon.json" <<'JSON'
{"benchmark": "run-peers", "commit": "abc1234", "date": "2026-11-28", "device": "sim", "device_bytes": 17179869184,
 "mqx_limit_bytes": 16106127360, "h2d_pinned_GBps": 50.0, "d2h_pinned_GBps": 50.0, "steps": 10,
 "systems": ["mqxd", "mqxd-own-blocks", "um"],
 "workloads": {"matrix": {"runs": [
  {"fraction": 1.15, "footprint_bytes": 19756849561,
   "mqxd": {"status": "ok", "tensors": 294, "steps": 10, "fill_s": 0.5, "steps_s": 3.0, "total_s": 4.0, "checksum": 1.5,
            "mqx_statistics": {"fence_waits": 40, "bytes_written_back": 4000000000, "bytes_dropped_clean": 0}},
   "mqxd-own-blocks": {"status": "ok", "tensors": 294, "steps": 10, "fill_s": 1.0, "steps_s": 3.0, "total_s": 5.0,
                       "checksum": 1.5, "mqx_statistics": {"fence_waits": 40, "bytes_written_back": 4000000000}},
   "um": {"status": "ok", "tensors": 294, "steps": 10, "fill_s": 0.8, "steps_s": 8.0, "total_s": 10.0, "checksum": 1.5}}]}}}
JSON
"$run_peers" --summarize "$scratch/daemon.json" --out "$scratch/daemon-summary.json" >/dev/null 2>&1 ||
  fail "--summarize of mqxd systems: exit $?"
python3 - "$scratch/daemon-summary.json" <<'PY' || fail "--summarize gave the mqxd systems no ratio or drains"
import json, sys
row = json.load(open(sys.argv[1]))["workloads"]["matrix"]["runs"][0]
assert abs(row["ratios"]["um_vs_mqxd"] - 2.5) < 1e-9 and abs(row["ratios"]["um_vs_mqxd-own-blocks"] - 2.0) < 1e-9, row
assert abs(row["drains"]["mqxd"]["fence_waits_per_GB"] - 10.0) < 1e-9, row["drains"]
assert "mqxd-own-blocks" in row["drains"], row["drains"]
PY
sed 's/"total_s": 1.6, "checksum": 1.5/"total_s": 1.6, "checksum": 2.5/' "$scratch/earlier.json" > "$scratch/differ.json"
out=$("$run_peers" --summarize "$scratch/differ.json" --out "$scratch/summary.json" 2>&1); rc=$?
[ "$rc" = 1 ] && grep -q "DIFFER" <<<"$out" || fail "--summarize with differing checksums: exit $rc, $out"
echo '{"systems": []' > "$scratch/broken.json"
err=$("$run_peers" --summarize "$scratch/broken.json" --out "$scratch/summary.json" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "not a run's JSON" <<<"$err" || fail "--summarize of a broken file: exit $rc, $err"

# SIGTERM (a time limit's timeout) stops the run in progress and summarizes
# what finished. A stand-in interpreter answers the device probe and then
# runs a workload that never ends.
cat > "$scratch/python" <<'SH'
#!/usr/bin/env bash
if [ "$1" = -c ]; then
  echo '{"name": "stand-in", "free": 17179869184, "total": 17179869184, "torch": "none", "h2d_pinned_GBps": 50.0, "d2h_pinned_GBps": 50.0}'
  exit 0
fi
exec sleep 59.125
SH
chmod +x "$scratch/python"
started=$(date +%s)
timeout -s TERM 3 "$run_peers" --python "$scratch/python" --systems native --workloads matrix --fractions 0.5,0.9 \
  --out "$scratch/stopped.json" > "$scratch/stopped.log" 2>&1
[ $(( $(date +%s) - started )) -lt 30 ] || fail "SIGTERM did not stop the run in progress"
grep -q "stopped by SIGTERM" "$scratch/stopped.log" || fail "no 'stopped by SIGTERM' line: $(cat "$scratch/stopped.log")"
python3 - "$scratch/stopped.json" <<'PY' || fail "the stopped run's JSON does not say so"
import json, sys
result = json.load(open(sys.argv[1]))
rows = result["workloads"]["matrix"]["runs"]
assert result["stopped"] and len(rows) == 1 and rows[0]["native"]["status"] == "stopped", result
PY
pgrep -f "sleep 59.125" > /dev/null && fail "the stopped workload is still running"
echo PASS
