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
echo PASS
