"""PyTorch under mqx: matrix products and elementwise work whose footprint
exceeds the configured device memory limit, compared with a run without
libmqx.

  torch_oversubscribe.py compute OUT.pt   # one run (native or preloaded)
  torch_oversubscribe.py compare A.pt B.pt
Exit 77 (skip) without PyTorch or a GPU.
"""
import ctypes
import json
import os
import re
import sys


def limit_bytes():
    text = os.environ.get("MQX_MEMORY_DEVICE_MEMORY_LIMIT", "1GiB")
    match = re.fullmatch(r"([0-9.]+)\s*(KiB|MiB|GiB)?", text)
    if not match:
        raise SystemExit(f"cannot parse MQX_MEMORY_DEVICE_MEMORY_LIMIT={text}")
    scale = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, None: 1}[match.group(2)]
    return int(float(match.group(1)) * scale)


def mqx():
    """libmqx's exports when it is preloaded, else None."""
    try:
        process = ctypes.CDLL(None)
        active = process.mqx_active
    except (OSError, AttributeError):
        return None
    statistics = process.mqx_statistics_json
    statistics.restype = ctypes.c_size_t
    statistics.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return active, statistics


def compute(out_path):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    n = 2048  # 16 MiB per float32 matrix
    matrix_bytes = n * n * 4
    count = max(8, (2 * limit_bytes()) // matrix_bytes + 1)  # inputs alone: twice the limit
    generator = torch.Generator().manual_seed(1234)
    # Created on the host and copied: lazy host-to-device copies whose
    # sources PyTorch frees right away.
    inputs = [torch.randn(n, n, generator=generator).cuda() for _ in range(count)]
    sums = []
    for i in range(count):
        product = inputs[i] @ inputs[(i + 1) % count]
        mixed = torch.relu(product) * 0.5 + inputs[i].sin()
        inputs[i].mul_(0.25).add_(1.0)  # in place: dirty pages to write back
        sums.append(mixed.sum(dim=0))
    checks = [inputs[i].sum().reshape(1) for i in range(count)]
    result = torch.cat(sums + checks).cpu()
    torch.cuda.synchronize()
    torch.save(result, out_path)
    footprint = count * matrix_bytes
    print(f"computed {count} products of {n}x{n} (inputs {footprint >> 20} MiB, limit {limit_bytes() >> 20} MiB)")
    exports = mqx()
    if exports is not None:
        active, statistics = exports
        buffer = ctypes.create_string_buffer(4096)
        statistics(buffer, len(buffer))
        stats = json.loads(buffer.value.decode())
        print("mqx statistics:", json.dumps(stats))
        if active() != 1:
            raise SystemExit("libmqx is preloaded but does not manage this process")
        if stats.get("evictions", 0) == 0:
            raise SystemExit("the footprint exceeded the limit but nothing was evicted")


def compare(a_path, b_path):
    import torch

    a = torch.load(a_path)
    b = torch.load(b_path)
    if a.shape != b.shape:
        raise SystemExit(f"shapes differ: {a.shape} vs {b.shape}")
    difference = (a - b).abs().max().item()
    print(f"max abs difference {difference:.3e} over {a.numel()} values")
    if not torch.allclose(a, b, rtol=1e-4, atol=1e-2):
        raise SystemExit("results differ from the run without libmqx")


def main():
    try:
        import torch
    except ImportError:
        print("no PyTorch: skipping")
        return 77
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch: skipping")
        return 77
    if sys.argv[1] == "compute":
        compute(sys.argv[2])
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown command {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
