"""One run of the peer benchmark's training workload (issue 14), in its own process.

Training steps of a deep MLP (forward, backward, Adam) whose parameters,
gradients, optimizer state and saved activations fill FOOTPRINT bytes:
layers of WIDTH x WIDTH fp32 weights (64 MiB at 4096), each with its
gradient and two Adam moments (4 copies) and a BATCH x WIDTH activation saved
for the backward pass. Every step streams through all of it three times
(forward in layer order, backward in reverse, the optimizer in order), the
access pattern of training a model larger than the device. Prints one JSON
line: the time of the steps, the time of the whole run, the losses and a
checksum of every parameter, so that runs under different systems can be
compared (the same kernels in the same order give the same sums).

The system is chosen outside: natively, under LD_PRELOAD=libmqx.so, or with
--um-allocator (Unified Memory through CUDAPluggableAllocator).
"""

from __future__ import annotations

import json
import sys
import time

from torch_setup import arguments, start_torch

WIDTH = 4096
BATCH = 2048
# Per layer: weight, gradient, Adam's two moments, the saved activation.
LAYER_BYTES = 4 * WIDTH * WIDTH * 4 + BATCH * WIDTH * 4


def layers_for(footprint: int) -> int:
    return max(2, footprint // LAYER_BYTES)


def main() -> int:
    args = arguments(__doc__.splitlines()[0], 6, "bytes of model, optimizer state, activations")
    torch = start_torch(args.um_allocator)
    torch.manual_seed(args.seed)
    count = layers_for(args.footprint)
    started = time.perf_counter()
    try:
        # Bias-free linear layers with a ReLU between: the weights dominate.
        model = torch.nn.Sequential(*[layer for _ in range(count) for layer in
                                      (torch.nn.Linear(WIDTH, WIDTH, bias=False, device="cuda"), torch.nn.ReLU())])
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)
        generator = torch.Generator(device="cuda")
        generator.manual_seed(args.seed)
        inputs = torch.randn(BATCH, WIDTH, device="cuda", generator=generator)
        targets = torch.randn(BATCH, WIDTH, device="cuda", generator=generator)
        torch.cuda.synchronize()
        filled = time.perf_counter()
        losses = []
        for _ in range(args.steps):
            optimizer.zero_grad(set_to_none=False)
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        torch.cuda.synchronize()
        stepped = time.perf_counter()
        checksum = sum(float(p.detach().sum(dtype=torch.float64)) for p in model.parameters())
        torch.cuda.synchronize()
    except torch.OutOfMemoryError as error:
        print(json.dumps({"status": "out of memory", "error": str(error).splitlines()[0],
                          "seconds": time.perf_counter() - started}))
        return 0
    print(json.dumps({"status": "ok", "layers": count, "footprint_bytes": count * LAYER_BYTES, "steps": args.steps,
                      "fill_s": filled - started, "steps_s": stepped - filled,
                      "total_s": time.perf_counter() - started, "losses": losses, "checksum": checksum}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
