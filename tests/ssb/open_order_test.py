#!/usr/bin/env python3
"""open_order_test.py SSB_EXPERIMENTS BUILD: the open system's policies run in a seeded shuffled
order per configuration, recorded (`order`, each row's `position`), while the rows keep the order
asked for (issue 30: at 8c361b6 the default always ran last of its call, so drift over the call
fell on it alone). On the simulated device, --smoke data, two seeds."""
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

driver, build = sys.argv[1], sys.argv[2]
asked = ["FIX-1", "FIX-2", "Adaptive"]
with tempfile.TemporaryDirectory() as scratch:
    out = Path(scratch) / "open.json"
    run = subprocess.run([sys.executable, driver, "--build", build, "--device", "sim", "--smoke", "--only", "open",
                          "--open-count", "3", "--open-rate", "20", "--open-admissions", ",".join(asked),
                          "--open-seeds", "1,2", "--out", str(out)],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    configurations = json.loads(out.read_text())["experiments"]["open"]["configurations"]
    assert [c["seed"] for c in configurations] == [1, 2], configurations
    for configuration in configurations:
        rows = configuration["policies"]
        assert [row["policy"] for row in rows] == asked, rows
        order = configuration["order"]
        assert sorted(order) == sorted(asked), order
        for row in rows:
            assert order[row["position"] - 1] == row["policy"], (order, row["policy"], row["position"])
        # Seeded by the configuration: the same seed gives the same order in another call.
        expected = random.Random(f"open-{configuration['rate_per_s']}-{configuration['seed']}").sample(asked, len(asked))
        assert order == expected, (order, expected)
print("ok")
