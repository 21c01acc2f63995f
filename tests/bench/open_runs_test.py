"""bench/ssb/experiments/open-runs (issue 30): the committed open-system runs per configuration.
The default's share of the best FIX-n is taken within each call, by the medians of a call's
rounds where it ran several; an older file's "Adaptive" is the default; --commits keeps the rule
family a claim is about; FIX-3's runs split at the widest gap in their evictions; a file that is
no open-system result exits 2."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parents[2]
tool = root / "bench" / "ssb" / "experiments" / "open-runs"
sys.path.insert(0, str(root / "python"))
from mqx.workload import poisson_trace  # noqa: E402


def row(policy: str, qps: float, turnaround: float, evictions: int = 0, **extra) -> dict:
    return {"policy": policy, "throughput_qps": qps, "mean_turnaround_s": turnaround, "evictions": evictions,
            "eviction_s": evictions * 0.002, "makespan_s": 20.0 / qps, **extra}


def document(commit: str, open_experiment: dict) -> dict:
    return {"commit": commit, "device": "NVIDIA H200", "experiments": {"open": open_experiment}}


def main() -> int:
    failures = []
    # A call of three rounds: the rows are medians; FIX-3's rounds evicted 400-500 times and beat FIX-2.
    rounds = [row("FIX-3", q, 15.0, e) for q, e in ((0.60, 400), (0.58, 500), (0.59, 450))]
    recent = document("aaaa111", {"rate_per_s": 2.0, "seed": 7, "policies": [
        row("FIX-2", 0.55, 17.0), row("FIX-3", 0.59, 15.0, 450, median_of=3, rounds=rounds),
        row("Default", 0.573, 16.5, 300, median_of=3),
        row("Default[MQX_DAEMON_ADAPTIVE_EVICTION_WINDOWS=2]", 0.59, 15.9, 400, median_of=3)]})
    # An older call of two seeds, the default named Adaptive, FIX-3 evicting 1,800-2,000 times and losing.
    older = document("bbbb222", {"configurations": [
        {"rate_per_s": 1.0, "seed": 8, "policies": [row("FIX-1", 0.35, 25.0), row("FIX-2", 0.52, 10.0),
                                                       row("FIX-3", 0.47, 12.0, 1800), row("Weight", 0.50, 11.0, 700),
                                                       row("Adaptive", 0.494, 10.5, 40)]},
        {"rate_per_s": 1.0, "seed": 9, "policies": [row("FIX-2", 0.50, 14.0), row("FIX-3", 0.43, 19.0, 2000),
                                                       row("Adaptive", 0.50, 14.0, 60)]}]})
    with tempfile.TemporaryDirectory() as directory:
        a, b, bad, out = (Path(directory) / name for name in ("a.json", "b.json", "bad.json", "summary.json"))
        a.write_text(json.dumps(recent))
        b.write_text(json.dumps(older))
        bad.write_text(json.dumps({"commit": "cccc333", "experiments": {"pairs": {}}}))
        result = subprocess.run([sys.executable, str(tool), str(a), str(b), "--json", str(out)], capture_output=True, text=True)
        if result.returncode != 0:
            failures.append(f"exit {result.returncode}: {result.stderr}")
        else:
            summary = json.loads(out.read_text())
            rows = {(r["rate_per_s"], r["seed"]): r for r in summary["rows"]}
            seven, eight, nine = rows[(2.0, 7)], rows[(1.0, 8)], rows[(1.0, 9)]
            if seven["best_fix"] != "FIX-3" or abs(seven["default_over_best_fix"] - 0.573 / 0.59) > 1e-9 or seven["rounds"] != 3:
                failures.append(f"the rounds' call: {seven}")
            if abs(eight["default_over_best_fix"] - 0.494 / 0.52) > 1e-9 or abs(eight["default_over_fix1"] - 0.494 / 0.35) > 1e-9:
                failures.append(f"Adaptive is not read as the default: {eight}")
            if abs(eight["weight_over_fix1"] - 0.50 / 0.35) > 1e-9 or nine["weight_over_fix1"] is not None:
                failures.append(f"Weight over FIX-1: {eight['weight_over_fix1']}, {nine['weight_over_fix1']} (want 1.4286, None)")
            if abs(eight["default_turnaround_over_best_fix"] - 1.05) > 1e-9:
                failures.append(f"turnaround ratio {eight['default_turnaround_over_best_fix']}, want 1.05")
            s = summary["summary"]
            if s["configurations"] != 3 or abs(s["by_rate"]["1.0"]["default_over_best_fix_median"] - (0.494 / 0.52 + 1.0) / 2) > 1e-9:
                failures.append(f"medians over configurations: {s}")
            variant = s["variants"].get("Default[MQX_DAEMON_ADAPTIVE_EVICTION_WINDOWS=2]")
            if not variant or variant["configurations"] != 1 or abs(variant["over_best_fix_median"] - 1.0) > 1e-9 \
                    or abs(variant["default_over_best_fix_median"] - 0.573 / 0.59) > 1e-9 \
                    or abs(variant["turnaround_over_best_fix_median"] - 15.9 / 15.0) > 1e-9 \
                    or seven["throughput_qps"].get("Default[MQX_DAEMON_ADAPTIVE_EVICTION_WINDOWS=2]") != 0.59:
                failures.append(f"the default's variant beside it: {s['variants']}")
            if eight["variants"] or abs(seven["default_over_best_fix"] - 0.573 / 0.59) > 1e-9:
                failures.append(f"a variant taken as the default, or a variant where none ran: {seven}, {eight}")
            split = s["fix3_by_evictions"]
            if s["fix3_runs"] != 5 or split["fewer"]["runs"] != 3 or split["fewer"]["faster_than_fix2"] != 3 \
                    or split["more"]["evictions"] != [1800, 2000] or split["more"]["faster_than_fix2"] != 0:
                failures.append(f"FIX-3 by evictions: {split}")
        kept = subprocess.run([sys.executable, str(tool), str(a), str(b), "--commits", "bbbb222", "--json", str(out)], capture_output=True, text=True)
        if kept.returncode != 0 or json.loads(out.read_text())["summary"]["configurations"] != 2:
            failures.append(f"--commits bbbb222 kept {json.loads(out.read_text())['summary']['configurations']} configurations, want 2")
        # A replayable call: three arrivals (seeded), each waiting 0.5 s and running 30 s, so that all
        # three run together from the last start to the first end; their peaks over the node then are
        # the three picked peaks over 1 GiB in MB, whatever the seed picked.
        queries, peaks = ["qa", "qb", "qc"], {"qa": 400.0, "qb": 450.0, "qc": 500.0}
        trace = poisson_trace(len(queries), 3, 1.0, 11)
        runs = [{"query": queries[pick], "waited": 0.5, "seconds": 30.0} for _, pick in trace]
        want = sum(peaks[run["query"]] for run in runs) / (2**30 / 1e6)
        replay = document("dddd444", {"queries": queries, "count": 3, "capacity": "1GiB", "peaks_mb": peaks,
                                      "rate_per_s": 1.0, "seed": 11, "policies": [
                                          row("FIX-2", 0.10, 30.0), row("FIX-3", 0.09, 30.0, 9, runs=runs)]})
        replayed = Path(directory) / "replay.json"
        replayed.write_text(json.dumps(replay))
        result = subprocess.run([sys.executable, str(tool), str(replayed), "--json", str(out)], capture_output=True, text=True)
        written = json.loads(out.read_text()) if result.returncode == 0 else {}
        got = written.get("fix3_runs", [{}])[0].get("peaks_over_capacity_at_three")
        if result.returncode != 0 or len(written["rows"]) != 1 or got is None or abs(got - want) > 1e-9:
            failures.append(f"peaks over the node at three: {got}, want {want} ({result.stderr})")
        if written.get("summary", {}).get("fix3_by_evictions") is not None:
            failures.append(f"one FIX-3 run split in two groups: {written['summary']['fix3_by_evictions']}")
        refused = subprocess.run([sys.executable, str(tool), str(a), str(bad)], capture_output=True, text=True)
        if refused.returncode != 2 or "bad.json" not in refused.stderr:
            failures.append(f"a file without an open system: exit {refused.returncode}, {refused.stderr!r}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
