"""One run of the peer benchmark's matrix workload (issue 14), in its own process.

Many live 4096x4096 fp32 tensors (64 MiB each) filling FOOTPRINT bytes; STEPS
steps in a seeded shuffled order, each a matrix product or an elementwise
blend of two tensors into a third. Prints one JSON line: the time of the
steps, the time of the whole run, and a checksum of every tensor, so that
runs under different systems can be compared byte for byte in spirit (the
same kernels in the same order give the same sums).

The system is chosen outside: natively, under LD_PRELOAD=libmqx.so, or with
--um-allocator (Unified Memory through CUDAPluggableAllocator).
"""

from __future__ import annotations

import json
import random
import sys
import time

from torch_setup import arguments, start_torch

SIDE = 4096
TENSOR_BYTES = SIDE * SIDE * 4


def make_tensors(torch, count: int, seed: int) -> list:
    """`count` seeded 4096x4096 fp32 tensors of unit variance on the device."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    return [torch.randn(SIDE, SIDE, device="cuda", generator=generator) for _ in range(count)]


def run_steps(torch, tensors: list, steps: int, seed: int) -> None:
    """The steps in their seeded order: a product into a third tensor, then
    scaled in place, or a blend of two into a third, then scaled."""
    order = random.Random(seed)
    scale = 1.0 / SIDE**0.5  # keeps products of unit-variance inputs at unit variance
    for step in range(steps):
        target, left, right = order.sample(range(len(tensors)), 3)
        if step % 2 == 0:
            torch.mm(tensors[left], tensors[right], out=tensors[target])
            tensors[target].mul_(scale)
        else:
            torch.add(tensors[left], tensors[right], alpha=0.5, out=tensors[target]).mul_(0.8)


def main() -> int:
    args = arguments(__doc__.splitlines()[0], 400, "bytes of live tensors")
    torch = start_torch(args.um_allocator)
    count = max(3, args.footprint // TENSOR_BYTES)
    started = time.perf_counter()
    try:
        tensors = make_tensors(torch, count, args.seed)
        torch.cuda.synchronize()
        filled = time.perf_counter()
        run_steps(torch, tensors, args.steps, args.seed)
        torch.cuda.synchronize()
        stepped = time.perf_counter()
        checksum = sum(float(t.sum(dtype=torch.float64)) for t in tensors)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError as error:
        print(json.dumps({"status": "out of memory", "error": str(error).splitlines()[0],
                          "seconds": time.perf_counter() - started}))
        return 0
    print(json.dumps({"status": "ok", "tensors": count, "footprint_bytes": count * TENSOR_BYTES,
                      "steps": args.steps, "fill_s": filled - started, "steps_s": stepped - filled,
                      "total_s": time.perf_counter() - started, "checksum": checksum}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
