"""bench/ssb/experiments/merge-grids (issue 30): two admission grids of the same settings on
different seeds merge into the grid of all the seeds (the same summary as one grid of them all),
and grids that differ in a setting, FIX-1's rate or their configurations, or that repeat a seed,
are refused with exit 2 and the reason."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parents[2]
experiments = root / "bench" / "ssb" / "experiments"
sys.path.insert(0, str(experiments))
loader = importlib.machinery.SourceFileLoader("admission_grid", str(experiments / "admission-grid"))
spec = importlib.util.spec_from_loader("admission_grid", loader)
grid = importlib.util.module_from_spec(spec)
loader.exec_module(grid)
tool = experiments / "merge-grids"


def run(policy: str, seed: int, qps: float) -> dict:
    return {"policy": policy, "seed": seed, "throughput_qps": qps, "mean_turnaround_s": 10.0 / qps, "evictions": 0}


def rows_of(seeds: list[int], scale: float) -> list[dict]:
    qps = {1: (0.50, 1.00, 0.88), 2: (0.50, 0.90, 0.93), 3: (0.30, 0.60, 0.62)}
    return [run(p, s, q * scale) for s in seeds for p, q in zip(("FIX-1", "FIX-2", "Default"), qps[s])]


def document(seeds: list[int], commit: str) -> dict:
    settings = {"sf": "0.2", "seeds": ",".join(map(str, seeds)), "policies": "FIX-1,FIX-2,Default", "bandwidth": 0.5, "out": f"/tmp/{commit}.json"}
    configurations = []
    for budget, scale in (("81MiB", 1.0), ("40MiB", 0.7)):
        rows = rows_of(seeds, scale)
        configurations.append({"budget": budget, "rate_factor": 4.4, "underload": False, "summary": grid.summarise(rows, ["FIX-1", "FIX-2"]), "runs": rows})
    return {"benchmark": "admission-grid", "commit": commit, "date": "2026-11-28", "settings": settings, "fix1_qps": 0.515, "configurations": configurations}


def main() -> int:
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        a, b, out = Path(directory) / "a.json", Path(directory) / "b.json", Path(directory) / "merged.json"
        a.write_text(json.dumps(document([1, 2], "aaaaaaa")))
        b.write_text(json.dumps(document([3], "bbbbbbb")))
        result = subprocess.run([sys.executable, str(tool), str(a), str(b), "--out", str(out)], capture_output=True, text=True)
        if result.returncode != 0:
            print(f"merge-grids exit {result.returncode}: {result.stderr}", file=sys.stderr)
            return 1
        merged = json.loads(out.read_text())
        whole = document([1, 2, 3], "ccccccc")
        for got, want in zip(merged["configurations"], whole["configurations"]):
            if got["summary"] != want["summary"]:
                failures.append(f"{got['budget']}: summary {got['summary']}, want one grid's of seeds 1-3 {want['summary']}")
            if len(got["runs"]) != 9:
                failures.append(f"{got['budget']}: {len(got['runs'])} runs, want 9")
        if merged["targets"] != grid.grid_targets(whole["configurations"])["targets"]:
            failures.append(f"targets {merged['targets']}")
        if merged["settings"]["seeds"] != "1,2,3" or [p["commit"] for p in merged["merged_from"]] != ["aaaaaaa", "bbbbbbb"]:
            failures.append(f"seeds {merged['settings']['seeds']}, parts {merged['merged_from']}")
        # Refused: a seed in both, another setting, another FIX-1 rate, other configurations.
        bad = {
            "seed 2 ran in a.json too": document([2], "ddddddd"),
            "settings differ from a.json's: bandwidth": dict(document([3], "eeeeeee"), settings=dict(document([3], "e")["settings"], bandwidth=1.0)),
            "FIX-1 rate 0.6": dict(document([3], "fffffff"), fix1_qps=0.6),
        }
        fewer = document([3], "ggggggg")
        fewer["configurations"] = fewer["configurations"][:1]
        bad["its configurations differ"] = fewer
        for want, part in bad.items():
            b.write_text(json.dumps(part))
            refused = subprocess.run([sys.executable, str(tool), str(a), str(b), "--out", str(out)], capture_output=True, text=True)
            if refused.returncode != 2 or want not in refused.stderr:
                failures.append(f"want exit 2 with '{want}': exit {refused.returncode}, {refused.stderr.strip()!r}")
        one = subprocess.run([sys.executable, str(tool), str(a), "--out", str(out)], capture_output=True, text=True)
        if one.returncode != 2:
            failures.append(f"one grid alone: exit {one.returncode}")
    for failure in failures:
        print(f"merge-grids test: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
