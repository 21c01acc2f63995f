"""What the PyTorch workloads of the peer benchmark share: their common
arguments and the start of torch under the system being measured."""

from __future__ import annotations

import argparse


def arguments(description: str, steps: int, footprint_help: str) -> argparse.Namespace:
    """--footprint, --steps, --seed and --um-allocator."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--footprint", type=int, required=True, help=footprint_help)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--um-allocator", help="the mqx_um_allocator library: Unified Memory")
    return parser.parse_args()


def start_torch(um_allocator: str | None):
    """Imports torch with Unified Memory as its allocator when asked (the
    allocator must be chosen before CUDA starts) and exact fp32 products
    (TF32 would make the sums depend on rounding only)."""
    import torch  # noqa: PLC0415

    if um_allocator:
        allocator = torch.cuda.memory.CUDAPluggableAllocator(um_allocator, "mqx_um_malloc", "mqx_um_free")
        torch.cuda.memory.change_current_allocator(allocator)
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch
