"""bench/ssb/experiments/queue-order-model (issue 30): a committed open run's arrival trace replayed
on n servers in arrival order, shortest first and highest response ratio next. The replay is
checked by hand on small queues; on a document, FIFO on one server against the recurrence
start = max(arrival, previous end) over the run's own trace; a file without an open experiment
exits 2."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parents[2]
tool = root / "bench" / "ssb" / "experiments" / "queue-order-model"
sys.path.insert(0, str(root / "python"))
from mqx.workload import poisson_trace  # noqa: E402


def load_tool():
    loader = importlib.machinery.SourceFileLoader("queue_order_model", str(tool))
    spec = importlib.util.spec_from_loader("queue_order_model", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main() -> int:
    failures = []
    model = load_tool()
    # Three queries at once, one server: FIFO 3, 4, 6; shortest first 1, 3, 6; HRRN takes the
    # first (all ratios 1), then the short one (ratio 4 against 2.5).
    cases = [([0, 0, 0], [3, 1, 2], 1, "fifo", 13 / 3, 6), ([0, 0, 0], [3, 1, 2], 1, "sjf", 10 / 3, 6),
             ([0, 0, 0], [3, 1, 2], 1, "hrrn", 13 / 3, 6),
             # Two servers: the long one beside three short ones back to back.
             ([0, 0, 0, 0], [4, 1, 1, 1], 2, "fifo", 2.5, 4),
             # A server idle until the next arrival.
             ([0, 10], [1, 1], 1, "fifo", 1.0, 11)]
    for arrivals, runs, servers, order, turnaround, makespan in cases:
        got = model.replay(arrivals, runs, servers, order)
        if abs(got[0] - turnaround) > 1e-9 or abs(got[1] - makespan) > 1e-9:
            failures.append(f"replay({arrivals}, {runs}, {servers}, {order}) = {got}, want ({turnaround}, {makespan})")
    names, count, rate, seed = ["short", "long"], 12, 1.0, 7
    run_seconds = {"short": 1.0, "long": 4.0}
    trace = poisson_trace(len(names), count, rate, seed)
    ends, previous = [], 0.0
    for at, pick in trace:
        previous = max(at, previous) + run_seconds[names[pick]]
        ends.append(previous - at)
    policy = {"policy": "FIX-1", "mean_turnaround_s": 9.0, "makespan_s": 30.0,
              "runs": [{"query": name, "process_s": seconds} for name, seconds in run_seconds.items()]}
    document = {"experiments": {"open": {"queries": names, "count": count, "rate_per_s": rate, "seed": seed,
                                         "policies": [policy, {**policy, "policy": "Weight"}]}}}
    with tempfile.TemporaryDirectory() as directory:
        good, bad, out = (Path(directory) / name for name in ("good.json", "bad.json", "out.json"))
        good.write_text(json.dumps(document))
        bad.write_text(json.dumps({"experiments": {"pairs": {}}}))
        result = subprocess.run([sys.executable, str(tool), str(good), "--json", str(out)], capture_output=True, text=True)
        if result.returncode != 0:
            failures.append(f"exit {result.returncode}: {result.stderr}")
        else:
            rows = json.loads(out.read_text())["rows"]
            if len(rows) != 1 or rows[0]["policy"] != "FIX-1":
                failures.append(f"rows {rows}: want FIX-1 alone (Weight is no fixed concurrency)")
            elif abs(rows[0]["fifo_turnaround_s"] - statistics.mean(ends)) > 1e-9 \
                    or rows[0]["sjf_turnaround_s"] > rows[0]["fifo_turnaround_s"] + 1e-9 \
                    or rows[0]["measured_turnaround_s"] != 9.0:
                failures.append(f"FIFO {rows[0]['fifo_turnaround_s']} against {statistics.mean(ends)}, SJF "
                                f"{rows[0]['sjf_turnaround_s']}, measured {rows[0]['measured_turnaround_s']}")
        refused = subprocess.run([sys.executable, str(tool), str(bad)], capture_output=True, text=True)
        if refused.returncode != 2 or "bad.json" not in refused.stderr:
            failures.append(f"a file without an open system: exit {refused.returncode}, {refused.stderr!r}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
