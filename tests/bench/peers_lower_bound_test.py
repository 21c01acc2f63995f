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
    # The default mode's blind trace (every overwrite but a creation a read):
    # MIN is still the exhaustive optimum of that trace, and never below the
    # trace that knows its dead values.
    for seed in range(300):
        rng = random.Random(1000 + seed)
        tensors = rng.randint(2, 6)
        capacity = rng.randint(1, tensors)
        trace = tuple((rng.randrange(tensors), rng.random() < 0.3) for _ in range(rng.randint(1, 14)))
        seen = tuple(lower_bound.blind(trace))
        got, want = lower_bound.min_loads(seen, capacity), exhaustive(seen, capacity)
        if got != want or got < lower_bound.min_loads(trace, capacity):
            print(f"seed {1000 + seed}: blind min_loads {got}, exhaustive {want}, capacity {capacity}, trace {trace}")
            return 1
        if any(writes and tensor in {t for t, _ in trace[:i]} for i, (tensor, writes) in enumerate(seen)):
            print(f"seed {1000 + seed}: a blind trace kept an overwrite: {seen}")
            return 1
    # The matrix job by default: its checksum reads every tensor once more,
    # and blind it loads at least what it loads knowing its dead values.
    matrix = lower_bound.matrix_trace(12, 200, 1, checksum=True)
    assert len(matrix) == 12 + 3 * 200 + 12
    for capacity in range(3, 12):
        assert lower_bound.min_loads(lower_bound.blind(matrix), capacity) >= lower_bound.min_loads(matrix, capacity)
    bound = lower_bound.default_mode_bound(1.5, 55e9, 55.0)
    assert abs(bound["limit_s"] - 2.5) < 1e-9, bound
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
