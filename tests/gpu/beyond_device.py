"""A job larger than its device, in PyTorch, CuPy or JAX, checked against a
reference computed another way (issue 29, "How it must be shown").

The job keeps CHUNKS chunks of CHUNK bytes alive at once (TOTAL bytes, more
than the device or the mqx limit holds) and runs PASSES elementwise passes
over all of them, so that every pass pages. Each chunk's result depends on
that chunk alone, so the reference (--reference) computes the same chunks
one at a time, natively, where one chunk fits: the same operations in the
same order on the same sizes, and the same checksums.

  beyond_device.py FRAMEWORK --total-gib G [--chunk-mib M] [--passes P] [--reference] --out OUT.json
  beyond_device.py compare JOB.json REFERENCE.json

FRAMEWORK: torch (its allocator mode from PYTORCH_CUDA_ALLOC_CONF), cupy
(MemoryAsyncPool: the device's stream-ordered pool), jax (its default
allocator: a pool of XLA_PYTHON_CLIENT_MEM_FRACTION of the device cuMemGetInfo
reports). Exit 77 when the framework or a GPU is missing.
"""
import argparse
import json
import math
import os
import sys
import time


def chunk_plan(args):
    chunk = args.chunk_mib << 20
    count = max(1, math.ceil(args.total_gib * (1 << 30) / chunk))
    return chunk // 4, count  # float32 elements per chunk


def constant(index, step):
    return float((index * 7 + step) % 13) * 1e-3


def run_torch(args, elements, count):
    try:
        import torch
    except ImportError:
        sys.exit(77)
    if not torch.cuda.is_available():
        sys.exit(77)

    def make(i):
        x = torch.arange(elements, device="cuda", dtype=torch.float32)
        return x.mul_(1e-7).add_(float(i))

    def step(x, i, p):
        x.mul_(0.999).add_(constant(i, p))

    def checksum(x):
        return torch.sum(x, dtype=torch.float64).item()

    return generic(args, count, make, step, checksum, torch.cuda.synchronize)


def run_cupy(args, elements, count):
    try:
        import cupy
    except ImportError:
        sys.exit(77)
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        sys.exit(77)
    cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)

    def make(i):
        x = cupy.arange(elements, dtype=cupy.float32)
        x *= cupy.float32(1e-7)
        x += cupy.float32(i)
        return x

    def step(x, i, p):
        x *= cupy.float32(0.999)
        x += cupy.float32(constant(i, p))

    def checksum(x):
        return float(cupy.sum(x, dtype=cupy.float64).get())

    return generic(args, count, make, step, checksum, cupy.cuda.Device().synchronize)


def run_jax(args, elements, count):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        sys.exit(77)
    if not any(device.platform == "gpu" for device in jax.devices()):
        sys.exit(77)
    jax.config.update("jax_enable_x64", True)

    @jax.jit
    def make_jit(i):
        return jnp.arange(elements, dtype=jnp.float32) * jnp.float32(1e-7) + i.astype(jnp.float32)

    stepped = jax.jit(lambda x, c: x * jnp.float32(0.999) + c.astype(jnp.float32), donate_argnums=0)
    summed = jax.jit(lambda x: jnp.sum(x, dtype=jnp.float64))
    chunks = {}

    def make(i):
        return make_jit(jnp.int32(i))

    def step_into(store, i, p):
        store[i] = stepped(store[i], jnp.float32(constant(i, p)))

    def checksum(x):
        return float(summed(x))

    def synchronize():
        for value in chunks.values():
            value.block_until_ready()

    return generic(args, count, make, None, checksum, synchronize, step_into=step_into, store=chunks)


def generic(args, count, make, step, checksum, synchronize, step_into=None, store=None):
    """Runs the job (all chunks alive) or its reference (one chunk at a time)."""
    store = {} if store is None else store

    def advance(i, p):
        if step_into is not None:
            step_into(store, i, p)
        else:
            step(store[i], i, p)

    start = time.perf_counter()
    sums = []
    if args.reference:
        for i in range(count):
            store[i] = make(i)
            for p in range(args.passes):
                advance(i, p)
            sums.append(checksum(store[i]))
            del store[i]
    else:
        for i in range(count):
            store[i] = make(i)
        for p in range(args.passes):
            for i in range(count):
                advance(i, p)
        synchronize()
        sums = [checksum(store[i]) for i in range(count)]
    return sums, time.perf_counter() - start


def compute(args):
    elements, count = chunk_plan(args)
    runner = {"torch": run_torch, "cupy": run_cupy, "jax": run_jax}[args.framework]
    sums, seconds = runner(args, elements, count)
    result = {
        "framework": args.framework,
        "reference": args.reference,
        "total_bytes": elements * 4 * count,
        "chunk_bytes": elements * 4,
        "chunks": count,
        "passes": args.passes,
        "seconds": seconds,
        "checksums": sums,
        "mode": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
        if args.framework == "torch"
        else os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"),
        "mqx_limit": os.environ.get("MQX_MEMORY_DEVICE_MEMORY_LIMIT", ""),
    }
    with open(args.out, "w") as handle:
        json.dump(result, handle)
    print(f"{args.framework} {'reference' if args.reference else 'job'}: {count} chunks of "
          f"{elements * 4 >> 20} MiB, {seconds:.1f} s")


def compare(job_path, reference_path):
    with open(job_path) as handle:
        job = json.load(handle)
    with open(reference_path) as handle:
        reference = json.load(handle)
    if len(job["checksums"]) != len(reference["checksums"]):
        print(f"chunk counts differ: {len(job['checksums'])} vs {len(reference['checksums'])}")
        return 1
    bad = [i for i, (a, b) in enumerate(zip(job["checksums"], reference["checksums"]))
           if not math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)]
    if bad:
        i = bad[0]
        print(f"{len(bad)} of {len(bad) and len(job['checksums'])} chunks differ; chunk {i}: "
              f"{job['checksums'][i]!r} vs {reference['checksums'][i]!r}")
        return 1
    print(f"all {len(job['checksums'])} checksums equal the reference's")
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("framework", choices=["torch", "cupy", "jax"])
    parser.add_argument("--total-gib", type=float, required=True)
    parser.add_argument("--chunk-mib", type=int, default=1024)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--out", required=True)
    compute(parser.parse_args())


if __name__ == "__main__":
    main()
