"""Honest lower bounds of the peer benchmark's runs (issue 31): the bytes any
policy must move, from Belady's MIN over the workload's exact access trace,
and a time of max(compute, those bytes at the measured pinned bandwidth),
since copies may overlap compute but neither can take less than it does.

MIN here keeps C tensors (the device's capacity, rounded up: the optimum of
pages of a tensor, which share its trace, is at least the optimum of whole
tensors at the capacity rounded up, the paging LP being integral at whole
capacities) and:
  - loads a tensor that is read while not resident (a load);
  - never loads one that is overwritten whole (an `out=` target): its old
    bytes are dead, so it is allocated, not loaded;
  - evicts the resident tensor whose next read is furthest away, a tensor
    whose next access overwrites it (or none comes) first: no policy, even
    with foresight, loads fewer bytes (Belady 1966, with dead values).
"""

from __future__ import annotations

import heapq
import random
from typing import Iterable, Sequence

Access = tuple  # (tensor, writes): writes=True overwrites it whole


def matrix_trace(count: int, steps: int, seed: int, checksum: bool = False) -> list:
    """The accesses of bench/peers/torch_matrix.py's steps, in its order: the
    fill creates every tensor on the device (a write), then each step reads
    two tensors and overwrites a third (torch.mm or torch.add with out=, then
    an in-place scale of the target, which is resident by then); with
    `checksum`, then its checksum, which reads every tensor in order."""
    trace = [(tensor, True) for tensor in range(count)]
    order = random.Random(seed)
    for _ in range(steps):
        target, left, right = order.sample(range(count), 3)
        trace += [(left, False), (right, False), (target, True)]
    if checksum:
        trace += [(tensor, False) for tensor in range(count)]
    return trace


def blind(trace: Sequence[Access]) -> list:
    """The trace as the default mode sees it: every launch may reach every
    page, so mqx cannot know that a kernel overwrites a tensor whole and
    loads it as if read. Only a tensor's first access, its creation (zeros
    that need no load), stays a write."""
    seen: set = set()
    out = []
    for tensor, writes in trace:
        out.append((tensor, writes and tensor not in seen))
        seen.add(tensor)
    return out


def min_loads(trace: Sequence[Access], capacity: int) -> int:
    """The fewest loads any policy with `capacity` resident tensors needs."""
    if capacity <= 0:
        return sum(1 for _, writes in trace if not writes)
    never = len(trace) + 1
    # The position of each access's next read of the same tensor; an
    # overwrite (or nothing) first means the value is dead: `never`.
    next_read = [never] * len(trace)
    upcoming: dict = {}
    for position in range(len(trace) - 1, -1, -1):
        tensor, writes = trace[position]
        next_read[position] = upcoming.get(tensor, never)
        upcoming[tensor] = never if writes else position
    resident: dict = {}  # tensor -> the position of its next read
    heap: list = []  # (-next read, tensor): lazily invalidated
    loads = 0
    for position, (tensor, writes) in enumerate(trace):
        if tensor not in resident:
            if not writes:
                loads += 1
            while len(resident) >= capacity:
                negative, victim = heapq.heappop(heap)
                if resident.get(victim) == -negative:
                    del resident[victim]
        resident[tensor] = next_read[position]
        heapq.heappush(heap, (-next_read[position], tensor))
    return loads


def bound(compute_s: float, bytes_h2d: float, h2d_gbps: float, bytes_d2h: float = 0.0,
          d2h_gbps: float = 1.0) -> dict:
    """max(compute, bytes per direction at its bandwidth)."""
    transfer_s = max(bytes_h2d / (h2d_gbps * 1e9), bytes_d2h / (d2h_gbps * 1e9))
    return {"bytes_h2d": bytes_h2d, "bytes_d2h": bytes_d2h, "transfer_s": transfer_s, "compute_s": compute_s,
            "limit_s": max(compute_s, transfer_s), "kind": "max(compute, MIN bytes / pinned bandwidth)"}


def default_mode_bound(compute_s: float, bytes_h2d: float, h2d_gbps: float) -> dict:
    """compute + those bytes at the pinned bandwidth, added, not overlapped:
    in the default mode a page is remapped only once the launches that may
    reach it are done (a drain), and the launch that needs it waits for its
    load, so no load overlaps a kernel (bench/results/profile-matrix-H100-
    90105ba.json: 0.000 s of copies beside kernels). A bound on what that
    rule allows, not on what the device can do (bound() is that)."""
    transfer_s = bytes_h2d / (h2d_gbps * 1e9)
    return {"bytes_h2d": bytes_h2d, "transfer_s": transfer_s, "compute_s": compute_s,
            "limit_s": compute_s + transfer_s,
            "kind": "default mode: compute + MIN loads (no value known dead) / pinned bandwidth, serial"}


def loads_of_scans(items: int, capacity: int, scans: int) -> int:
    """Every item is touched in each scan: at its start at most `capacity`
    are resident, so at least items - capacity are loaded in each (any
    policy, any order within a scan)."""
    return scans * max(0, items - capacity)


def _check(cases: Iterable) -> None:
    for trace, capacity, expected in cases:
        assert min_loads(trace, capacity) == expected, (trace, capacity, min_loads(trace, capacity))


if __name__ == "__main__":
    R, W = False, True
    _check([
        ([(0, W), (1, W), (0, R), (1, R)], 2, 0),  # fits
        ([(0, W), (1, W), (2, W), (0, R), (1, R), (2, R)], 2, 1),  # MIN keeps two of three
        ([(0, W), (1, W), (0, W), (1, R)], 1, 1),  # 0 overwritten: dead, evicted for free
        ([(0, R), (1, R), (2, R), (0, R), (1, R), (2, R)], 2, 4),  # cyclic: 3 cold + 1
    ])
    print("lower_bound: ok")
