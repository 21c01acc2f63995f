"""The SSB experiments of the MultiQx-GPU paper (§7) on mqx: the query programs of bench/ssb/gpu
on the GPU or on the simulated device, under mqxd and mqx-run (python/mqx/workload.py runs them).

Experiments (each returns a JSON-ready dict):

  pairs      closed system of two queries (§7.1-7.2): weighted speedup Σ sᵢ/cᵢ of every pair under
             mqx over the queries' native solo times (one by one natively is 1), and DMA efficiency
             (a·x + b·y)/t, with bytes transferred by mqx standing in for DMA time
  open       open system (§7.5): N queries drawn from the 13, Poisson arrivals; throughput (queries
             per second) under the admission policies FIX-1, FIX-2, FIX-3, Peak and Weight; Peak and
             Weight use each query's operator plan (mqx-run --plan) written from its solo run
  policies   replacement policies LRU, MRU, LFU, RANDOM, CDR (§7.3): the queries at once under a
             tight node budget; makespan, throughput, evictions, bytes moved
  ablations  the same workload with CDR and one optimisation off each (§7.4): NoLazy, NoCow,
             NoRef, NoAccess, NoPage
  overhead   each query alone natively and under mqx (ample budget), and pairs without contention
             (§7.6)

"Native" is the program run directly: on the GPU without libmqx; on the simulated device with the
process's own device (libmqx's manager with a private budget of sim.capacity), no mqxd. Every query
run is checked exactly against the CPU reference (--check); a run that fails or differs fails the
experiment.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Optional, Sequence

REPOSITORY = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPOSITORY / "python"))
from mqx.workload import (  # noqa: E402
    Daemon,
    QueryCommand,
    QueryResult,
    run_closed,
    run_concurrent,
    run_poisson,
    throughput,
    weighted_speedup,
)
from placement import placement  # noqa: E402,F401  experiment "placement" (issue 16), on the helpers below

QUERIES = ["q1.1", "q1.2", "q1.3", "q2.1", "q2.2", "q2.3", "q3.1", "q3.2", "q3.3", "q3.4", "q4.1", "q4.2", "q4.3"]
POLICIES = ["lru", "mru", "lfu", "random", "cdr"]
# configs/default.toml's keys behind the paper's ablations.
ABLATIONS = {
    "Full": {},
    "NoLazy": {"MQX_OPTIMIZATIONS_LAZY_TRANSFER": "false"},
    "NoCow": {"MQX_OPTIMIZATIONS_COPY_ON_WRITE": "false"},
    "NoRef": {"MQX_OPTIMIZATIONS_REFERENCE_DETECTION": "all"},
    "NoAccess": {"MQX_OPTIMIZATIONS_ACCESS_ADVICE": "false"},
    "NoPage": {"MQX_OPTIMIZATIONS_PAGE_COHERENCE": "false"},
}
ADMISSIONS = [("FIX-1", "fix", 1), ("FIX-2", "fix", 2), ("FIX-3", "fix", 3), ("Peak", "peak", 1), ("Weight", "weight", 1)]
# libmqx.so logs its statistics at exit (info); the sim programs print them.
_STATISTICS = re.compile(r"statistics:? (\{.*\})")
_OPERATOR = re.compile(r"^# operator (.+?)\s+([0-9.]+) ms\s+([0-9.]+) MB$", re.M)
_CROSS = re.compile(r"(\d+) cross-process evictions freed (\d+) MiB")


class ExperimentError(RuntimeError):
    """A query failed or differed from the reference."""


@dataclass
class Setup:
    build: Path
    data: Path
    device: str  # sim or gpu
    budget: str  # the node budget of contended runs
    repeats: int
    timeout: float

    def program(self, query: str) -> str:
        return str(self.build / "bench" / "ssb" / "gpu" / f"ssb-{query}")

    def command(self, query: str, plan: Optional[str] = None) -> QueryCommand:
        argv = [self.program(query), "--data", str(self.data), "--check", "--device", self.device]
        return QueryCommand(query, argv, plan=plan, env={"MQX_LOG_LEVEL": "info"})

    @property
    def mqx_run(self) -> str:
        return str(self.build / "bin" / "mqx-run")

    def daemon(self, capacity: str, admission: str = "weight", fix_n: int = 1, settings: Optional[dict] = None) -> Daemon:
        return Daemon(
            admission=admission,
            fix_n=fix_n,
            capacity=capacity,
            bin_dir=self.build / "bin",
            settings={"MQX_LOG_LEVEL": "info", **(settings or {})},
        )


def _check(results: Sequence[QueryResult]) -> None:
    for result in results:
        if not result.ok or "# check passed" not in result.stdout:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            raise ExperimentError(f"{result.name} failed (exit {result.exit_code}):\n{tail}")


def _statistics(result: QueryResult) -> dict:
    found = _STATISTICS.findall(result.stdout + "\n" + result.stderr)
    return json.loads(found[-1]) if found else {}


def _moved(results: Sequence[QueryResult]) -> int:
    """Bytes mqx transferred between host and device for these runs."""
    return sum(_statistics(r).get("bytes_to_device", 0) + _statistics(r).get("bytes_to_host", 0) for r in results)


def _cross(node: Daemon) -> dict:
    match = _CROSS.search(node.log)
    return {"cross_process_evictions": int(match.group(1)), "cross_process_mib": int(match.group(2))} if match else {}


def _native(setup: Setup, queries: Sequence[str]) -> list[tuple[str, float, str]]:
    """Runs the queries' programs directly and at once; (query, seconds, stdout) each."""
    start = time.monotonic()
    processes = [
        (q, subprocess.Popen(setup.command(q).argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for q in queries
    ]
    runs = []
    for query, process in processes:
        stdout, stderr = process.communicate(timeout=setup.timeout)
        if process.returncode != 0 or "# check passed" not in stdout:
            raise ExperimentError(f"{query} failed natively (exit {process.returncode}): {stderr.strip()[-500:]}")
        runs.append((query, time.monotonic() - start, stdout))
    return runs


def solo_native(setup: Setup, queries: Sequence[str]) -> dict[str, float]:
    """sᵢ: mean seconds of each query run alone natively, setup.repeats times (after one run that
    warms the page cache and is not counted)."""
    for query in queries:
        _native(setup, [query])
    return {q: statistics.mean(_native(setup, [q])[0][1] for _ in range(setup.repeats)) for q in queries}


def solo_mqx(setup: Setup, queries: Sequence[str], capacity: str) -> dict[str, QueryResult]:
    """Each query alone under mqx-run on a node of `capacity`."""
    runs = {}
    with setup.daemon(capacity) as node:
        for query in queries:
            (result,) = run_concurrent([setup.command(query)], env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
            _check([result])
            runs[query] = result
    return runs


def pairs(setup: Setup, pair_list: Sequence[tuple[str, str]]) -> dict:
    names = sorted({q for pair in pair_list for q in pair})
    solo = solo_native(setup, names)
    alone = solo_mqx(setup, names, setup.budget)
    rows = []
    for a, b in pair_list:
        with setup.daemon(setup.budget) as node:
            results = run_closed([setup.command(a), setup.command(b)], setup.repeats, env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout)
        _check(results)
        solo_bytes = sum(_moved([alone[r.name]]) for r in results)
        corun_bytes = _moved(results)
        rows.append(
            {
                "pair": [a, b],
                "weighted_speedup": weighted_speedup(solo, results),
                "dma_efficiency": solo_bytes / corun_bytes if corun_bytes else None,
                "corun_seconds": {q: statistics.mean(r.seconds for r in results if r.name == q) for q in (a, b)},
                "evictions": sum(_statistics(r).get("evictions", 0) for r in results),
                **_cross(node),
            }
        )
    return {"solo_native_seconds": solo, "budget": setup.budget, "repeats": setup.repeats, "pairs": rows}


def _plan_file(directory: Path, result: QueryResult) -> str:
    """The query's operator plan (docs/daemon.md) from its solo run: time and device memory per step."""
    lines = [f'name = "{result.name}"']
    for name, ms, mb in _OPERATOR.findall(result.stdout):
        lines += ["[[operator]]", f"time = {max(float(ms), 0.001)}", f"memory = {int(float(mb) * 1e6)}  # {name.strip()}"]
    path = directory / f"{result.name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def open_system(setup: Setup, queries: Sequence[str], count: int, rate: float, seed: int, capacity: str) -> dict:
    alone = solo_mqx(setup, queries, capacity)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ssb-plans-") as directory:
        plans = {q: _plan_file(Path(directory), alone[q]) for q in queries}
        commands = [setup.command(q, plan=plans[q]) for q in queries]
        for label, admission, fix_n in ADMISSIONS:
            with setup.daemon(capacity, admission=admission, fix_n=fix_n) as node:
                results = run_poisson(commands, rate, count, seed, env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
            _check(results)
            rows.append(
                {
                    "policy": label,
                    "throughput_qps": throughput(results),
                    "mean_turnaround_s": statistics.mean(r.seconds for r in results),
                    "mean_wait_s": statistics.mean(r.waited or 0.0 for r in results),
                    **_cross(node),
                }
            )
    return {"queries": list(queries), "count": count, "rate_per_s": rate, "seed": seed, "capacity": capacity, "policies": rows}


def _contended(setup: Setup, queries: Sequence[str], settings: dict) -> dict:
    with setup.daemon(setup.budget, settings=settings) as node:
        results = run_concurrent([setup.command(q) for q in queries], env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
    _check(results)
    makespan = max(r.finished for r in results) - min(r.submitted for r in results)
    return {
        "makespan_s": makespan,
        "throughput_qps": throughput(results),
        "evictions": sum(_statistics(r).get("evictions", 0) for r in results),
        "bytes_moved": _moved(results),
        **_cross(node),
    }


def policies(setup: Setup, queries: Sequence[str]) -> dict:
    rows = [{"policy": p.upper(), **_contended(setup, queries, {"MQX_POLICY_REPLACEMENT": p})} for p in POLICIES]
    return {"queries": list(queries), "budget": setup.budget, "policies": rows}


def ablations(setup: Setup, queries: Sequence[str]) -> dict:
    rows = [{"variant": name, **_contended(setup, queries, settings)} for name, settings in ABLATIONS.items()]
    return {"queries": list(queries), "budget": setup.budget, "variants": rows}


def overhead(setup: Setup, queries: Sequence[str], pair_list: Sequence[tuple[str, str]], capacity: str) -> dict:
    native = solo_native(setup, queries)
    under = {q: statistics.mean(r.seconds for r in [solo_mqx(setup, [q], capacity)[q] for _ in range(setup.repeats)]) for q in queries}
    rows = [{"query": q, "native_s": native[q], "mqx_s": under[q], "ratio": under[q] / native[q]} for q in queries]
    pair_rows = []
    for a, b in pair_list:
        native_pair = max(seconds for _, seconds, _ in _native(setup, [a, b]))
        with setup.daemon(capacity) as node:
            results = run_concurrent([setup.command(a), setup.command(b)], env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
        _check(results)
        mqx_pair = max(r.finished for r in results) - min(r.submitted for r in results)
        pair_rows.append({"pair": [a, b], "native_s": native_pair, "mqx_s": mqx_pair, "ratio": mqx_pair / native_pair})
    return {"capacity": capacity, "queries": rows, "pairs": pair_rows}


def all_pairs(queries: Sequence[str]) -> list[tuple[str, str]]:
    return list(combinations(queries, 2))


def device_name(setup: Setup) -> str:
    if setup.device == "sim":
        return "sim"
    out = subprocess.run(setup.command("q1.1").argv, capture_output=True, text=True, timeout=setup.timeout).stdout
    match = re.search(r"^# device (.+)$", out, re.M)
    return match.group(1) if match else "unknown"


def commit() -> str:
    """MQX_COMMIT (set where the checkout has no git, e.g. on a device machine), else git's HEAD."""
    if os.environ.get("MQX_COMMIT"):
        return os.environ["MQX_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return head.stdout.strip() or "unknown"
    except OSError:
        return "unknown"
