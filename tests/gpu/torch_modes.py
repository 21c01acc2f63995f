"""PyTorch in its allocator modes under mqx, over the configured device limit,
compared with a native run: the caching allocator (cudaMalloc), expandable
segments (the program's own cuMemCreate/cuMemMap), cudaMallocAsync, and a CUDA
graph captured and replayed (torch.cuda.graph).

  torch_modes.py compute OUT.json    # one run; PYTORCH_CUDA_ALLOC_CONF picks the mode
  torch_modes.py compare A.json B.json
Exit 77 (skip) without PyTorch or a GPU.
"""
import json
import os
import sys


def compute(out):
    try:
        import torch
    except ImportError:
        sys.exit(77)
    if not torch.cuda.is_available():
        sys.exit(77)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 1024
    count = int(os.environ.get("TORCH_MODES_TENSORS", "64"))  # 64 x 4 MiB, 256 MiB with the products
    xs = [torch.randn(n, n, device="cuda") for _ in range(count)]
    acc = torch.zeros(n, n, device="cuda")
    for _ in range(2):
        for i in range(count):
            acc = acc * 0.5 + (xs[i] @ xs[(i + 7) % count]) * 1e-3
            xs[i] = torch.tanh(xs[i] + acc * 1e-2)
    # A CUDA graph: captured on a side stream, replayed with new inputs.
    static_in = torch.empty(n, n, device="cuda")
    weight = xs[1].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            torch.relu(static_in.normal_() @ weight)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = torch.relu(static_in @ weight) + 1
    replays = []
    for k in range(4):
        static_in.copy_(xs[k])
        graph.replay()
        replays.append(static_out.double().sum().item())
    torch.cuda.synchronize()
    result = {
        "tensors": [x.double().sum().item() for x in xs],
        "acc": acc.double().sum().item(),
        "graph": replays,
        "mode": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"),
    }
    with open(out, "w") as handle:
        json.dump(result, handle)


def compare(a, b):
    with open(a) as handle:
        first = json.load(handle)
    with open(b) as handle:
        second = json.load(handle)
    values = lambda r: r["tensors"] + [r["acc"]] + r["graph"]
    worst = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(values(first), values(second)))
    print(f"{second['mode']}: worst relative difference {worst:.3g}")
    sys.exit(0 if worst < 1e-6 else 1)


if __name__ == "__main__":
    if sys.argv[1] == "compute":
        compute(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
