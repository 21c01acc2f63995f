"""tools/open-system-timeline (issue 30): on a made-up merged trace of a solo run's mqxd and an
open run's mqxd with three queries (one postponed), the open run is chosen, the k-th admission is
paired with the k-th process to start, a postponed query's wait runs from its postponement, and
each query's transfers and evictions are its own, and the load rate by level counts host-to-device
loads, not lazy copies, at the level running at each load's midpoint. With --require-paired an admission without its
process exits 1 (a warning otherwise). A trace with no mqxd that admitted a query exits 2."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

tool = Path(__file__).resolve().parents[2] / "tools" / "open-system-timeline"


def meta(pid: int, name: str) -> dict:
    return {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}


def decision(pid: int, ts: float, what: str, label: str) -> dict:
    return {"name": what, "cat": "admission", "ph": "i", "pid": pid, "tid": 1, "ts": ts, "s": "t", "args": {"label": label}}


def span(pid: int, ts: float, dur: float, name: str, cat: str, **args) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": pid, "ts": ts, "dur": dur, "args": args}


def counter(pid: int, ts: float, name: str, value: int) -> dict:
    return {"name": name, "cat": "counter", "ph": "C", "pid": pid, "tid": 0, "ts": ts, "args": {"queries": value}}


def trace() -> list[dict]:
    solo, node = 5, 10
    events = [meta(solo, "mqxd"), meta(node, "mqxd")]
    # The solo run: its own mqxd, one query, long before.
    events += [counter(solo, 1_000, "admission queue", 0), decision(solo, 2_000, "admitted", "q9"), counter(solo, 50_000, "admission queue", 0)]
    events += [meta(6, "mqx client (sim)"), span(6, 3_000, 10_000, "copy H2D (application)", "transfer", bytes=7)]
    # The open run: q1 and q2 admitted at once; q3 postponed at 3 s, admitted at 5 s.
    events += [counter(node, 1_000_000, "admission queue", 0), counter(node, 1_000_000, "adaptive limit", 2)]
    events += [decision(node, 1_100_000, "admitted", "q1"), decision(node, 1_200_000, "admitted", "q2")]
    events += [decision(node, 3_000_000, "postponed", "q3"), counter(node, 3_000_000, "admission queue", 1)]
    events += [decision(node, 5_000_000, "admitted", "q3"), counter(node, 5_000_000, "admission queue", 0)]
    events += [counter(node, 9_000_000, "adaptive limit", 3)]
    # Their processes, in the order they started.
    events += [meta(21, "mqx client (sim)"), meta(22, "mqx client (sim)"), meta(23, "mqx client (sim)")]
    events += [span(21, 1_150_000, 100, "copy H2D (application)", "transfer", bytes=100), span(21, 5_100_000, 10, "evict", "eviction", bytes=8)]
    events += [span(21, 5_000_000, 100, "load H2D (swap buffer)", "transfer", bytes=50), span(21, 6_000_000, 1, "launch", "launch")]
    events += [span(22, 1_250_000, 100, "copy H2D (application)", "transfer", bytes=200), span(22, 4_000_000, 1, "launch", "launch")]
    events += [span(23, 5_050_000, 100, "copy H2D (application)", "transfer", bytes=300), span(23, 5_200_000, 10, "evict", "eviction", bytes=8)]
    events += [span(23, 5_300_000, 10, "evict peer region", "eviction", bytes=8), span(23, 8_000_000, 1, "launch", "launch")]
    return events


def main() -> int:
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        path, summary = Path(directory) / "trace.json", Path(directory) / "summary.json"
        path.write_text(json.dumps({"traceEvents": trace()}))
        result = subprocess.run([sys.executable, str(tool), str(path), "--summary", str(summary)], capture_output=True, text=True)
        if result.returncode != 0:
            print(f"open-system-timeline exit {result.returncode}: {result.stderr}", file=sys.stderr)
            return 1
        run = json.loads(summary.read_text())
        if run["daemon_pid"] != 10:
            failures.append(f"daemon {run['daemon_pid']}, want the open run's (10)")
        got = [(q["label"], q["pid"]) for q in run["queries"]]
        if got != [("q1", 21), ("q2", 22), ("q3", 23)]:
            failures.append(f"queries {got}")
        else:
            q1, q2, q3 = run["queries"]
            if abs(q3["arrival_s"] - 2.0) > 1e-9 or abs(q3["waited_s"] - 2.0) > 1e-9:
                failures.append(f"q3 arrived at {q3['arrival_s']} s and waited {q3['waited_s']} s, want 2 and 2")
            if q1["waited_s"] != 0 or q2["waited_s"] != 0:
                failures.append(f"q1, q2 waited {q1['waited_s']}, {q2['waited_s']} s, want 0")
            if (q1["transfers"], q1["transfer_bytes"], q1["evictions"]) != (2, 150, 1):
                failures.append(f"q1 {q1['transfers']} transfers of {q1['transfer_bytes']} bytes, {q1['evictions']} evictions")
            if (q1["loaded_bytes"], q2["loaded_bytes"]) != (50, 0):
                failures.append(f"q1, q2 loaded {q1['loaded_bytes']}, {q2['loaded_bytes']} bytes, want 50 (its swap load), 0 (a lazy copy only)")
            if (q3["transfers"], q3["evictions"]) != (1, 2):
                failures.append(f"q3 {q3['transfers']} transfers, {q3['evictions']} evictions, want 1, 2")
            if abs(q2["end_s"] - 3.000001) > 1e-9:
                failures.append(f"q2 ends at {q2['end_s']} s, want 3.000001 (its last event's end)")
        if run["totals"] != {"waited": 1, "transfers": 4, "evictions": 3}:
            failures.append(f"totals {run['totals']}")
        if [v for _, v in run["adaptive_limit"]] != [2.0, 3.0]:
            failures.append(f"adaptive limit {run['adaptive_limit']}")
        # By level: q1 runs 1.15-6.000001 s, q2 1.25-4.000001 s, q3 5.05-8.000001 s, so 3.15 s at one
        # running and 3.7 s at two. q1's 50-byte swap load (midpoint 5.00005 s) is at one; an 8 MiB
        # load of q2 at 2 s taking 1 ms is at two, at 8.39 GB/s. A lazy copy ("copy H2D") is no load.
        path.write_text(json.dumps(trace() + [span(22, 2_000_000, 1_000, "load H2D (application buffer)", "transfer", bytes=8 << 20)]))
        subprocess.run([sys.executable, str(tool), str(path), "--summary", str(summary)], capture_output=True, text=True)
        levels = {level["running"]: level for level in json.loads(summary.read_text())["levels"]}
        want = {
            1: (3.149999, 50 / 3.149999 / 1e9, 0, None),
            2: (3.700002, (8 << 20) / 3.700002 / 1e9, 1, 8.388608),
        }
        if sorted(levels) != [1, 2]:
            failures.append(f"levels {sorted(levels)}, want [1, 2]")
        else:
            for running, (seconds, loaded, count, rate) in want.items():
                got = levels[running]
                if (
                    abs(got["seconds"] - seconds) > 1e-5
                    or abs(got["loaded_gb_per_s"] - loaded) > 1e-12
                    or got["loads"] != count
                    or (rate is None) != (got["median_load_gb_per_s"] is None)
                    or (rate is not None and abs(got["median_load_gb_per_s"] - rate) > 1e-9)
                ):
                    failures.append(f"level {running}: {got}, want {seconds} s, {loaded:.3g} GB/s, {count} loads at {rate}")
        path.write_text(json.dumps(trace()))
        # --require-paired: exit 0 where every admission has its process, 1 where one has none
        # (a fourth admission at 8 s whose process never traced); a warning only without it.
        paired = subprocess.run([sys.executable, str(tool), str(path), "--require-paired"], capture_output=True, text=True)
        if paired.returncode != 0:
            failures.append(f"--require-paired on a paired trace: exit {paired.returncode}, {paired.stderr.strip()!r}")
        path.write_text(json.dumps(trace() + [decision(10, 8_000_000, "admitted", "q4")]))
        unpaired = subprocess.run([sys.executable, str(tool), str(path), "--require-paired"], capture_output=True, text=True)
        if unpaired.returncode != 1 or "4 admissions but 3 processes" not in unpaired.stderr:
            failures.append(f"--require-paired with an admission unpaired: exit {unpaired.returncode}, {unpaired.stderr.strip()!r}")
        warned = subprocess.run([sys.executable, str(tool), str(path)], capture_output=True, text=True)
        if warned.returncode != 0 or "4 admissions but 3 processes" not in warned.stderr:
            failures.append(f"an admission unpaired without --require-paired: exit {warned.returncode}, {warned.stderr.strip()!r}")
        # No mqxd that admitted anything: a clear error, exit 2.
        path.write_text(json.dumps([e for e in trace() if e.get("name") != "admitted"]))
        bad = subprocess.run([sys.executable, str(tool), str(path)], capture_output=True, text=True)
        if bad.returncode != 2 or "no mqxd" not in bad.stderr:
            failures.append(f"without admissions: exit {bad.returncode}, {bad.stderr.strip()!r}")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("open-system-timeline test: no matplotlib here, the figure is not drawn")
        else:
            png = Path(directory) / "timeline.png"
            path.write_text(json.dumps(trace()))
            drawn = subprocess.run([sys.executable, str(tool), str(path), "--png", str(png)], capture_output=True, text=True)
            if drawn.returncode != 0 or not png.exists() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
                failures.append(f"--png: exit {drawn.returncode}, {drawn.stderr.strip()!r}")
    for failure in failures:
        print(f"open-system-timeline test: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
