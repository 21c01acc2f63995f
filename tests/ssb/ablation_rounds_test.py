#!/usr/bin/env python3
"""ablation_rounds_test.py SSB_EXPERIMENTS BUILD: the ablations chosen by name and run in rounds
(issue 31: Full against NoPage as medians of three). On the simulated device, --smoke data: each
variant once per round, the row being its median run's with every run kept; an unknown variant
and a round count below one are refused naming the option."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

driver, build = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as scratch:
    out = Path(scratch) / "ablations.json"
    run = subprocess.run([sys.executable, driver, "--build", build, "--device", "sim", "--smoke", "--only", "ablations",
                          "--ablations", "Full,NoPage", "--ablation-rounds", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    ablations = json.loads(out.read_text())["experiments"]["ablations"]
    assert ablations["rounds"] == 2, ablations
    assert [row["variant"] for row in ablations["variants"]] == ["Full", "NoPage"], ablations["variants"]
    # The order they ran in is kept (the call's first run starts cold), each run naming its place.
    assert sorted(ablations["order"]) == ["Full", "Full", "NoPage", "NoPage"], ablations["order"]
    for row in ablations["variants"]:
        positions = [run["position"] for run in row["rounds"]]
        assert [ablations["order"][p - 1] for p in positions] == [row["variant"]] * 2, (positions, ablations["order"])
        values = row["makespan_s_values"]
        assert len(values) == 2 and len(row["rounds"]) == 2, row
        assert row["makespan_s"] in values, row  # the median run's (of two: the larger)
        assert row["makespan_s"] == max(values), row
    for bad, option in ((["--ablations", "Full,Bogus"], "--ablations"), (["--ablation-rounds", "0"], "--ablation-rounds")):
        refused = subprocess.run([sys.executable, driver, "--build", build, "--device", "sim", *bad],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and option in refused.stderr, (bad, refused.returncode, refused.stderr[-500:])
print("ok")
