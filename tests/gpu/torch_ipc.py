"""torch.multiprocessing with CUDA tensors (cuIpcGetMemHandle and cuIpcOpenMemHandle underneath),
natively and under libmqx.so: run_torch_test.sh runs `compute` both ways and `compare`s.

compute OUT: a parent fills two tensors, sends them to a spawned child through a queue (PyTorch
shares each tensor's CUDA allocation by IPC handle), the child checks what it received and adds to
one in place, the parent then uses more device memory than the limit around them and records what
it sees. OUT holds the sums and samples of every tensor, for compare.
"""

import sys

import torch
import torch.multiprocessing as mp

ELEMENTS = 8 << 20  # 32 MiB of float32 per tensor


def child(queue, done):
    first, second = queue.get()
    received = [float(first.double().sum()), float(second.double().sum())]
    second.add_(1.0)  # in place: the parent's memory
    torch.cuda.synchronize()
    done.put(received)
    done.get()  # the parent holds the tensors until the child let go of them


def compute(out):
    context = mp.get_context("spawn")
    queue, done = context.Queue(), context.Queue()
    generator = torch.Generator(device="cuda").manual_seed(7)
    first = torch.rand(ELEMENTS, device="cuda", generator=generator)
    second = torch.arange(ELEMENTS, device="cuda", dtype=torch.float32) / ELEMENTS
    worker = context.Process(target=child, args=(queue, done))
    worker.start()
    queue.put((first, second))
    received = done.get(timeout=120)
    # The rest of the device used around the shared tensors: 24 more, 768 MiB.
    pressure = [torch.full((ELEMENTS,), float(i), device="cuda") for i in range(24)]
    pressure_sum = float(sum(p.double().sum() for p in pressure))
    done.put("bye")
    worker.join(timeout=120)
    if worker.exitcode != 0:
        sys.exit(f"the child exited with {worker.exitcode}")
    torch.cuda.synchronize()
    result = {
        "received": torch.tensor(received, dtype=torch.float64),
        "first": first.double().sum().cpu(),
        "second": second.double().sum().cpu(),
        "second_sample": second[::4099].cpu(),
        "pressure": torch.tensor(pressure_sum, dtype=torch.float64),
    }
    torch.save(result, out)
    print(f"torch_ipc: child received sums {received}, second after its add {float(result['second']):.1f}")


def compare(native, mqx):
    a, b = torch.load(native), torch.load(mqx)
    for key in a:
        if not torch.equal(a[key], b[key]):
            sys.exit(f"torch_ipc: '{key}' differs: native {a[key]}, mqx {b[key]}")
    expected_second = float(a["received"][1]) + ELEMENTS
    if abs(float(b["second"]) - expected_second) > 1e-6 * expected_second:
        sys.exit(f"torch_ipc: the child's add is not in the parent's tensor ({float(b['second'])} vs {expected_second})")
    print("torch_ipc: native and mqx agree, and the child's writes reached the parent")


if __name__ == "__main__":
    if sys.argv[1] == "compute":
        compute(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
