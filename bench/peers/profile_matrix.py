"""Where the matrix workload's steps spend the device's time (issue 31).

Runs bench/peers/torch_matrix.py's steps (same tensors, same seeded order)
under torch.profiler's CUDA activity trace (CUPTI: every kernel and every
copy in the context, mqx's own copies on its streams included) and prints one
JSON line: the span of the steps on the device, the time kernels ran, the
time each copy direction ran, the time copies ran beside kernels, and the
time the device ran nothing, with the idle gaps' count and sizes. Run it as
torch_matrix.py is run: natively, or under LD_PRELOAD=libmqx.so with a limit.

    profile_matrix.py --footprint BYTES [--steps N] [--seed S] [--trace FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from torch_matrix import TENSOR_BYTES, make_tensors, run_steps


def busy_intervals(events: list, predicate) -> list:
    """The union of the [start, end) intervals of the events chosen, sorted."""
    spans = sorted((event.time_range.start, event.time_range.end) for event in events if predicate(event))
    merged: list = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def total(intervals: list) -> float:
    return sum(end - start for start, end in intervals)


def intersection(first: list, second: list) -> float:
    """The time both unions cover (both sorted and disjoint within)."""
    covered, i, j = 0.0, 0, 0
    while i < len(first) and j < len(second):
        start = max(first[i][0], second[j][0])
        end = min(first[i][1], second[j][1])
        covered += max(0.0, end - start)
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return covered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--footprint", type=int, required=True, help="bytes of live tensors")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trace", help="also write the Chrome trace here")
    args = parser.parse_args()

    import torch  # noqa: PLC0415
    from torch.autograd import DeviceType  # noqa: PLC0415
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

    torch.backends.cuda.matmul.allow_tf32 = False
    count = max(3, args.footprint // TENSOR_BYTES)
    tensors = make_tensors(torch, count, args.seed)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        started = time.perf_counter()
        run_steps(torch, tensors, args.steps, args.seed)
        torch.cuda.synchronize()
        steps_s = time.perf_counter() - started
    if args.trace:
        profiler.export_chrome_trace(args.trace)
    events = [event for event in profiler.events() if event.device_type == DeviceType.CUDA]

    def named(*words):
        return lambda event: any(word in event.name.lower() for word in words)

    copies_h2d = busy_intervals(events, named("htod", "host to device", "h2d"))
    copies_d2h = busy_intervals(events, named("dtoh", "device to host", "d2h"))
    copies_any = busy_intervals(events, named("memcpy", "memset"))
    kernels = busy_intervals(events, lambda event: not named("memcpy", "memset")(event))
    everything = busy_intervals(events, lambda event: True)
    span = everything[-1][1] - everything[0][0] if everything else 0.0
    gaps = [everything[k + 1][0] - end for k, (_, end) in enumerate(everything[:-1])]
    gaps.sort()

    def seconds(microseconds: float) -> float:
        return round(microseconds / 1e6, 4)

    summary = {
        "steps": args.steps,
        "tensors": count,
        "steps_s": round(steps_s, 4),
        "device_span_s": seconds(span),
        "kernels_s": seconds(total(kernels)),
        "copies_h2d_s": seconds(total(copies_h2d)),
        "copies_d2h_s": seconds(total(copies_d2h)),
        "copies_s": seconds(total(copies_any)),
        "copies_beside_kernels_s": seconds(intersection(copies_any, kernels)),
        "idle_s": seconds(span - total(everything)),
        "idle_gaps": len(gaps),
        "idle_gaps_over_100us": sum(1 for gap in gaps if gap > 100),
        "idle_in_gaps_over_100us_s": seconds(sum(gap for gap in gaps if gap > 100)),
        "idle_gap_median_over_100us_us": (lambda big: round(big[len(big) // 2], 1) if big else 0.0)(
            [gap for gap in gaps if gap > 100]),
        "kernel_events": sum(1 for event in events if not named("memcpy", "memset")(event)),
        "copy_events": sum(1 for event in events if named("memcpy", "memset")(event)),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
