"""bench/peers/lower_bound.py's MIN against an exhaustive search (issue 31: a
"limit" must be a real lower bound): on seeded random small traces of reads
and whole overwrites, min_loads equals the fewest loads over every choice of
victims. The seed is printed on a failure."""

from __future__ import annotations

import functools
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "peers"))
import lower_bound  # noqa: E402


def exhaustive(trace, capacity: int) -> int:
    @functools.lru_cache(maxsize=None)
    def best(position: int, resident: frozenset) -> int:
        if position == len(trace):
            return 0
        tensor, writes = trace[position]
        cost = 0 if tensor in resident or writes else 1
        if tensor in resident:
            return cost + best(position + 1, resident)
        if len(resident) < capacity:
            return cost + best(position + 1, resident | {tensor})
        return cost + min(best(position + 1, (resident - {victim}) | {tensor}) for victim in resident)

    return best(0, frozenset())


def main() -> int:
    for seed in range(300):
        rng = random.Random(seed)
        tensors = rng.randint(2, 6)
        capacity = rng.randint(1, tensors)
        trace = tuple((rng.randrange(tensors), rng.random() < 0.3) for _ in range(rng.randint(1, 14)))
        got, want = lower_bound.min_loads(trace, capacity), exhaustive(trace, capacity)
        if got != want:
            print(f"seed {seed}: min_loads {got}, exhaustive {want}, capacity {capacity}, trace {trace}")
            return 1
    # The matrix workload's trace: a fitting footprint loads nothing, fewer
    # resident tensors never load less, and at 3 (one step's) some load.
    trace = lower_bound.matrix_trace(10, 200, 1)
    loads = [lower_bound.min_loads(trace, capacity) for capacity in range(3, 11)]
    assert loads[-1] == 0 and loads[0] > 0, loads
    assert all(a >= b for a, b in zip(loads, loads[1:])), loads
    print("MIN equals the exhaustive optimum on 300 seeded traces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
