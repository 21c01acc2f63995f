"""The SSB experiments of the MultiQx-GPU paper (§7) on mqx: the query programs of bench/ssb/gpu
on the GPU or on the simulated device, under mqxd and mqx-run (python/mqx/workload.py runs them).

Experiments (each returns a JSON-ready dict):

  pairs      closed system of two queries (§7.1-7.2): weighted speedup Σ sᵢ/cᵢ of every pair under
             mqx over the queries' native solo times (one by one natively is 1), and DMA efficiency
             (a·x + b·y)/t as the paper defines it, a ratio of times: x, y the transfer time of each
             query alone under mqx-run (measured in the same call), t the transfer time of the
             co-running (each process's transfer time: the time its launches waited for loads and
             backing plus the time it spent evicting, libmqx's residency_wait_ns + eviction_ns)
  open       open system (§7.5): N queries drawn from the 13, Poisson arrivals; throughput (queries
             per second) and makespan under the admission policies FIX-1 to FIX-4, Peak, Weight and
             Adaptive (mqxd's default, docs/daemon.md); Peak, Weight and Adaptive use each query's
             operator plan (mqx-run --plan) written from its solo run
  policies   replacement policies LRU, MRU, LFU, RANDOM, CDR (§7.3): the queries at once under a
             tight node budget; makespan, throughput, evictions, bytes moved
  ablations  the same workload with CDR and one optimisation off each (§7.4): NoLazy, NoCow,
             NoRef, NoAccess, NoPage
  overhead   each query alone natively and under mqx (ample budget), and pairs without contention
             (§7.6)
  cdr        CDR against LRU (and the other policies) where their costs differ (§4.2): the queries'
             join-first variant (large intermediates written on the device and read operators later,
             base columns read once) at once under a node budget below the sum of their peaks,
             several rounds; makespan, bytes moved, written back and dropped clean per policy

The paper's regime (docs/ssb.md): with a shared column store (SharedStore: an ssb-loader process
keeps the columns in shared memory, each query maps them: --shared) and --repeat N (each query
process runs its GPU work N times), a query process spends most of its time on the GPU. Every run
records gpu_fraction: the seconds of GPU work and transfers the query reported (the executor's
timed phases, "# timing") over the process's wall time (mqx-run's "ran"; natively the time from
spawn to exit). Budgets can be set relative to the queries' peaks (budget_fraction): a budget
below the sum of the co-running queries' peaks, measured alone.

"Native" is the program run directly: on the GPU without libmqx; on the simulated device with the
process's own device (libmqx's manager with a private budget of sim.capacity), no mqxd. Every query
run is checked exactly against the CPU reference (--check); a run that fails or differs fails the
experiment.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Callable, Optional, Sequence

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
from mqx.libmqx_log import parse_statistics  # noqa: E402  (libmqx's statistics lines; re-exported)
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

# The paper's page (§6: 8 MiB keeps >99% of PCIe efficiency), not mqx's default of 64 MiB
# (configs/default.toml, chosen for VMM costs on the H100): the experiments reproduce the paper's,
# and NoPage is an ablation only where regions span several pages. MQX_MEMORY_PAGE_SIZE in the
# environment overrides it.
PAGE_SIZE = os.environ.get("MQX_MEMORY_PAGE_SIZE", "8MiB")
# The paper's open system (§7.5) compares Weight and Peak with FIX-1 to FIX-4.
# Adaptive (mqxd's default: docs/daemon.md, "Adaptive admission") is the admission that is to beat
# the best of them without being told n.
ADMISSIONS = [
    ("FIX-1", "fix", 1),
    ("FIX-2", "fix", 2),
    ("FIX-3", "fix", 3),
    ("FIX-4", "fix", 4),
    ("Peak", "peak", 1),
    ("Weight", "weight", 1),
    ("Adaptive", "adaptive", 1),
]
# mqxd's default, whatever it is (no daemon.admission given): a run labelled Default; not in the
# default list (it is Adaptive today), named with --open-admissions or by the admission grid.
DEFAULT_ADMISSION = ("Default", None, 1)
_ADAPTIVE = re.compile(r"mqxd: adaptive admission.*$", re.M)
_READY = re.compile(r"mqxd: node .* ready: .*$", re.M)
_OPERATOR = re.compile(r"^# operator (.+?)\s+([0-9.]+) ms\s+([0-9.]+) MB$", re.M)
_CROSS = re.compile(r"(\d+) cross-process evictions freed (\d+) MiB")
_TIMING = re.compile(r"^# timing (\{.*\})$", re.M)
_PEAK = re.compile(r"^# device peak ([0-9.]+) MB$", re.M)
# A result counts as the paper's regime when the GPU work takes this much of the process's time.
REGIME_FRACTION = 0.8


class ExperimentError(RuntimeError):
    """A query failed or differed from the reference."""


@dataclass
class Setup:
    build: Path
    data: Path
    device: str  # sim or gpu
    budget: str  # the node budget of contended runs (unless budget_fraction)
    repeats: int
    timeout: float
    shared: Optional[str] = None  # the shared column store's name (SharedStore), else files
    repeat: int = 1  # --repeat of every query process: its GPU work N times
    budget_fraction: Optional[float] = None  # contended budgets: this fraction of the summed peaks
    capacity: str = "4GiB"  # ample: where peaks are measured
    variant: tuple[str, ...] = ()  # e.g. ("--join-first",)
    solo_repeats: Optional[int] = None  # native solo runs per query (default: repeats)
    peaks: dict = field(default_factory=dict)  # (variant, query) -> MB, measured alone
    node_settings: dict = field(default_factory=dict)  # MQX_* of every node and its queries (e.g. the sim's link)

    def program(self, query: str) -> str:
        return str(self.build / "bench" / "ssb" / "gpu" / f"ssb-{query}")

    def command(self, query: str, plan: Optional[str] = None) -> QueryCommand:
        source = ["--shared", self.shared] if self.shared else ["--data", str(self.data)]
        repeat = ["--repeat", str(self.repeat)] if self.repeat > 1 else []
        argv = [self.program(query), *source, "--check", "--device", self.device, *repeat, *self.variant]
        return QueryCommand(query, argv, plan=plan, env={"MQX_LOG_LEVEL": "info", "MQX_MEMORY_PAGE_SIZE": PAGE_SIZE})

    @property
    def mqx_run(self) -> str:
        return str(self.build / "bin" / "mqx-run")

    def daemon(self, capacity: str, admission: Optional[str] = "weight", fix_n: int = 1, settings: Optional[dict] = None) -> Daemon:
        return Daemon(
            admission=admission,
            fix_n=fix_n,
            capacity=capacity,
            bin_dir=self.build / "bin",
            settings={"MQX_LOG_LEVEL": "info", **self.node_settings, **(settings or {})},
        )


def _check(results: Sequence[QueryResult]) -> None:
    for result in results:
        if not result.ok or "# check passed" not in result.stdout:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            raise ExperimentError(f"{result.name} failed (exit {result.exit_code}):\n{tail}")
        if not _TIMING.search(result.stdout):
            raise ExperimentError(f"{result.name} printed no '# timing' line: its GPU fraction is unknown")


def _statistics(result: QueryResult) -> dict:
    return parse_statistics(result.stdout + "\n" + result.stderr)


def _moved(results: Sequence[QueryResult]) -> int:
    """Bytes mqx transferred between host and device for these runs."""
    return sum(_statistics(r).get("bytes_to_device", 0) + _statistics(r).get("bytes_to_host", 0) for r in results)


def transfer_seconds(result: QueryResult) -> float:
    """The time a process spent on data movement (§7.1's DMA time, as libmqx measures it): its
    launches' waits for loads and backing (residency_wait_ns) plus the time it spent evicting
    (eviction_ns)."""
    stats = _statistics(result)
    return (stats.get("residency_wait_ns", 0) + stats.get("eviction_ns", 0)) / 1e9


def dma_efficiency(alone: dict, results: Sequence[QueryResult]) -> Optional[float]:
    """(a·x + b·y)/t (§7.1): the transfer time each run's query needed alone (x, y; `alone` maps a
    query to its alone run, measured in the same call) over the co-running runs' transfer time t."""
    corun = sum(transfer_seconds(r) for r in results)
    needed = sum(transfer_seconds(alone[r.name]) for r in results)
    return needed / corun if corun > 0 else None


def _cross(node: Daemon) -> dict:
    match = _CROSS.search(node.log)
    return {"cross_process_evictions": int(match.group(1)), "cross_process_mib": int(match.group(2))} if match else {}


def _timing_of(query: str, stdout: str, process_seconds: float, **extra) -> dict:
    """One run's GPU fraction: the GPU work the query reported over the process's wall time."""
    match = _TIMING.search(stdout)
    timing = json.loads(match.group(1)) if match else {}
    gpu = timing.get("gpu_ms", 0.0) / 1000.0
    return {
        "query": query,
        **extra,
        "process_s": round(process_seconds, 4),
        "gpu_s": round(gpu, 4),
        "gpu_fraction": round(gpu / process_seconds, 4) if process_seconds > 0 else None,
        "gpu_fraction_inside": timing.get("gpu_fraction"),  # the query's own view, before its exit
        "load_s": round(timing.get("load_ms", 0.0) / 1000.0, 4),
        "check_s": round(timing.get("check_ms", 0.0) / 1000.0, 4),
        # The first repeat and the mean of the others: mqx's lazy transfers show in the difference.
        "repeat_first_s": round(timing["repeat_ms"][0] / 1000.0, 4) if timing.get("repeat_ms") else None,
        "repeat_rest_mean_s": round(statistics.mean(timing["repeat_ms"][1:]) / 1000.0, 4) if len(timing.get("repeat_ms", [])) > 1 else None,
    }


def _timing(result: QueryResult) -> dict:
    """gpu_fraction of a run under mqx-run: over the seconds mqx-run says the query ran."""
    process = result.ran if result.ran else result.seconds - (result.waited or 0.0)
    stats = _statistics(result)
    return _timing_of(
        result.name,
        result.stdout,
        process,
        seconds=round(result.seconds, 4),
        waited=result.waited,
        bytes_to_device=stats.get("bytes_to_device"),
        evictions=stats.get("evictions"),
    )


def fraction_summary(runs: Sequence[dict]) -> dict:
    """The GPU fractions of a set of runs, and whether all of them are in the paper's regime."""
    fractions = [r["gpu_fraction"] for r in runs if r.get("gpu_fraction") is not None]
    if not fractions:
        return {"runs": 0}
    return {
        "runs": len(fractions),
        "min": round(min(fractions), 4),
        "mean": round(statistics.mean(fractions), 4),
        "max": round(max(fractions), 4),
        "regime": min(fractions) >= REGIME_FRACTION,
    }


def _peak_mb(stdout: str) -> float:
    match = _PEAK.search(stdout)
    return float(match.group(1)) if match else 0.0


def _mib(megabytes: float) -> str:
    return f"{max(1, int(megabytes * 1e6 / 2**20))}MiB"


def peaks(setup: Setup, queries: Sequence[str]) -> dict[str, float]:
    """Each query's device peak (MB) alone under mqx-run at the ample capacity, measured once per
    variant and kept in setup.peaks."""
    missing = [q for q in queries if (setup.variant, q) not in setup.peaks]
    if missing:
        for query, result in solo_mqx(setup, missing, setup.capacity).items():
            setup.peaks[(setup.variant, query)] = _peak_mb(result.stdout)
    return {q: setup.peaks[(setup.variant, q)] for q in queries}


def contended_budget(setup: Setup, queries: Sequence[str]) -> tuple[str, dict]:
    """The node budget of `queries` running at once: setup.budget, or budget_fraction of the sum of
    their peaks alone (memory decides); with what it was derived from."""
    if setup.budget_fraction is None:
        return setup.budget, {"budget": setup.budget}
    alone = peaks(setup, queries)
    total = sum(alone.values())
    budget = _mib(setup.budget_fraction * total)
    return budget, {"budget": budget, "budget_fraction": setup.budget_fraction, "sum_of_peaks_mb": round(total, 1), "peaks_mb": alone}


class SharedStore:
    """An ssb-loader process keeping the data's columns in shared memory while the experiments run
    (the queries map them: Setup.shared). Started and waited for (bounded) on entry, stopped on exit."""

    def __init__(self, build: Path, data: Path, name: Optional[str] = None, timeout: float = 900.0) -> None:
        self.program = str(build / "bench" / "ssb" / "loader" / "ssb-loader")
        self.data = data
        self.name = name or f"experiments-{os.getpid()}"
        self.timeout = timeout
        self.ready_line = ""
        self.process: Optional[subprocess.Popen[str]] = None

    def __enter__(self) -> "SharedStore":
        self.process = subprocess.Popen(
            [self.program, "--data", str(self.data), "--name", self.name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        # The loader prints one ready line once every column and reference result is in place
        # (or exits); the wait for it is bounded.
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout)
        line = self.process.stdout.readline() if ready else ""
        if " ready: " not in line:
            why = self._stderr() or f"nothing within {self.timeout:.0f} s"
            self.__exit__(None, None, None)
            raise ExperimentError(f"ssb-loader did not get store {self.name} ready: {line.strip()} {why}")
        self.ready_line = line.strip()
        print(self.ready_line, file=sys.stderr, flush=True)
        return self

    def _stderr(self) -> str:
        if self.process is None or self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read().strip()

    def __exit__(self, *exc) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()


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
        if process.returncode != 0 or "# check passed" not in stdout or not _TIMING.search(stdout):
            raise ExperimentError(f"{query} failed natively (exit {process.returncode}): {stderr.strip()[-500:]}")
        runs.append((query, time.monotonic() - start, stdout))
    return runs


def solo_native(setup: Setup, queries: Sequence[str], runs: Optional[list] = None) -> dict[str, float]:
    """sᵢ: mean seconds of each query run alone natively, setup.solo_repeats (else setup.repeats)
    times, after one run that warms the page cache and is not counted (none with a shared store,
    which is in memory already). `runs` receives each counted run's timing."""
    if not setup.shared:
        for query in queries:
            _native(setup, [query])
    seconds = {}
    for query in queries:
        measured = []
        for _ in range(setup.solo_repeats or setup.repeats):
            ((_, wall, stdout),) = _native(setup, [query])
            measured.append(wall)
            if runs is not None:
                runs.append(_timing_of(query, stdout, wall, native=True))
        seconds[query] = statistics.mean(measured)
    return seconds


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
    native_runs: list = []
    solo = solo_native(setup, names, native_runs)
    # Bytes a query moves alone: at the contended budget, or at the ample capacity where the
    # budget is relative to the peaks (each pair has its own budget then).
    alone = solo_mqx(setup, names, setup.budget if setup.budget_fraction is None else setup.capacity)
    if setup.budget_fraction is not None:
        for query, result in alone.items():
            setup.peaks.setdefault((setup.variant, query), _peak_mb(result.stdout))
    # sᵢ under mqx: each query alone under mqx-run (its turnaround), where mqx's own transfers make
    # a query alone faster or slower than natively.
    solo_under_mqx = {q: alone[q].seconds for q in names}
    rows = []
    for a, b in pair_list:
        budget, budget_info = contended_budget(setup, [a, b])
        with setup.daemon(budget) as node:
            results = run_closed([setup.command(a), setup.command(b)], setup.repeats, env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout)
        _check(results)
        solo_bytes = sum(_moved([alone[r.name]]) for r in results)
        corun_bytes = _moved(results)
        runs = [_timing(r) for r in results]
        rows.append(
            {
                "pair": [a, b],
                "weighted_speedup": weighted_speedup(solo, results),
                "weighted_speedup_over_mqx_alone": weighted_speedup(solo_under_mqx, results),
                "dma_efficiency": dma_efficiency(alone, results),
                "dma_efficiency_bytes": solo_bytes / corun_bytes if corun_bytes else None,
                "transfer_seconds": sum(transfer_seconds(r) for r in results),
                "corun_seconds": {q: statistics.mean(r.seconds for r in results if r.name == q) for q in (a, b)},
                "evictions": sum(_statistics(r).get("evictions", 0) for r in results),
                "bytes_moved": corun_bytes,
                **_cross(node),
                **budget_info,
                "gpu_fraction": fraction_summary(runs),
                "runs": runs,
            }
        )
    speedups = [row["weighted_speedup"] for row in rows]
    over_mqx = [row["weighted_speedup_over_mqx_alone"] for row in rows]
    all_runs = [run for row in rows for run in row["runs"]]
    return {
        "solo_native_seconds": solo,
        "solo_mqx_seconds": solo_under_mqx,
        "budget": setup.budget if setup.budget_fraction is None else f"{setup.budget_fraction} x the pair's summed peaks",
        "repeats": setup.repeats,
        "repeat": setup.repeat,
        "summary": {
            "pairs": len(rows),
            "weighted_speedup_mean": statistics.mean(speedups) if speedups else None,
            "weighted_speedup_min": min(speedups) if speedups else None,
            "weighted_speedup_max": max(speedups) if speedups else None,
            "weighted_speedup_over_mqx_alone_mean": statistics.mean(over_mqx) if over_mqx else None,
            "weighted_speedup_over_mqx_alone_min": min(over_mqx) if over_mqx else None,
            "weighted_speedup_over_mqx_alone_max": max(over_mqx) if over_mqx else None,
            "gpu_fraction": fraction_summary(all_runs),
            "native_gpu_fraction": fraction_summary(native_runs),
        },
        "native_runs": native_runs,
        "alone_runs": [_timing(alone[q]) for q in names],
        "pairs": rows,
    }


def _plan_file(directory: Path, result: QueryResult) -> str:
    """The query's operator plan (docs/daemon.md) from its solo run: time and device memory per step."""
    lines = [f'name = "{result.name}"']
    for name, ms, mb in _OPERATOR.findall(result.stdout):
        lines += ["[[operator]]", f"time = {max(float(ms), 0.001)}", f"memory = {int(float(mb) * 1e6)}  # {name.strip()}"]
    path = directory / f"{result.name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


_VARIANT = re.compile(r"^([^\[\]]+)\[([^\[\]]*)\]$")


def split_variant(label: str) -> tuple[str, dict]:
    """A policy label's base and mqxd settings: "Default[MQX_DAEMON_ADAPTIVE_INITIAL_LIMIT=3]" (several
    separated by ';') is Default run with that setting, so that one call compares a setting with the
    policy as it is (issue 30: a controller's option against the default, rounds in one call); a
    plain label is itself with {}. ValueError on anything but MQX_ variables with values."""
    label = label.strip()
    match = _VARIANT.match(label)
    if not match:
        if "[" in label or "]" in label:
            raise ValueError(f"admission '{label}': a variant is BASE[MQX_NAME=value;...]")
        return label, {}
    settings = {}
    for item in filter(None, (part.strip() for part in match.group(2).split(";"))):
        name, equals, value = item.partition("=")
        if not equals or not re.fullmatch(r"MQX_[A-Z0-9_]+", name.strip()) or not value.strip():
            raise ValueError(f"admission '{label}': '{item}' is not MQX_NAME=value")
        settings[name.strip()] = value.strip()
    if not settings:
        raise ValueError(f"admission '{label}': a variant names at least one MQX_NAME=value")
    return match.group(1).strip(), settings


def variant_settings(label: str) -> dict:
    """The mqxd settings a policy label carries (split_variant); {} for a plain label."""
    return split_variant(label)[1]


def admissions(names: Optional[str]) -> list[tuple[str, str, int]]:
    """The rows of ADMISSIONS named in `names` (comma-separated labels, e.g. "FIX-1,Weight,Adaptive";
    case does not matter), all of them for None. A label may carry mqxd settings in brackets
    (split_variant): its row is its base's under the whole label."""
    if not names:
        return list(ADMISSIONS)
    by_label = {row[0].lower(): row for row in [*ADMISSIONS, DEFAULT_ADMISSION]}
    chosen = []
    for name in names.split(","):
        base, settings = split_variant(name)
        if base.lower() not in by_label:
            raise ValueError(f"unknown admission '{name}' (choose from {', '.join(row[0] for row in ADMISSIONS)})")
        row = by_label[base.lower()]
        chosen.append((name.strip(), row[1], row[2]) if settings else row)
    if len({row[0].lower() for row in chosen}) != len(chosen):
        raise ValueError(f"admissions named twice in '{names}'")
    return chosen


def open_run(
    setup: Setup, commands: Sequence[QueryCommand], label: str, admission: Optional[str], fix_n: int, rate: float, count: int, seed: int, capacity: str
) -> dict:
    """One open-system run (§7.5) under one admission policy."""
    with setup.daemon(capacity, admission=admission, fix_n=fix_n, settings=variant_settings(label)) as node:
        results = run_poisson(commands, rate, count, seed, env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
    _check(results)
    runs = [_timing(r) for r in results]
    row = {
        "policy": label,
        "throughput_qps": throughput(results),
        "makespan_s": max(r.finished for r in results) - min(r.submitted for r in results),
        "mean_turnaround_s": statistics.mean(r.seconds for r in results),
        "mean_wait_s": statistics.mean(r.waited or 0.0 for r in results),
        "evictions": sum(_statistics(r).get("evictions", 0) for r in results),
        "eviction_s": sum(_statistics(r).get("eviction_ns", 0) for r in results) / 1e9,
        "transfer_s": sum(transfer_seconds(r) for r in results),
        "bytes_moved": _moved(results),
        **_cross(node),
        "gpu_fraction": fraction_summary(runs),
        "runs": runs,
    }
    ready = _READY.search(node.log)
    row["mqxd"] = ready.group(0) if ready else None
    decisions = _ADAPTIVE.findall(node.log)
    if decisions:
        row["adaptive_decisions"] = decisions
    return row


# The fields of an open-system row that are medians over its rounds (open_rounds_row).
ROUND_MEDIANS = ("throughput_qps", "makespan_s", "mean_turnaround_s", "mean_wait_s")


def open_rounds_row(runs: Sequence[dict]) -> dict:
    """One policy's row over its rounds (runs in the order they ran): the run of median throughput
    (the lower middle one of an even count) with the medians of ROUND_MEDIANS over all runs in
    their place, each of them per run under "<field>_runs", and every run whole under "rounds".
    One run is its own row. A single run per policy in a call says nothing about the spread of one
    policy between runs, which is as large as the differences the open system is run to measure
    (issue 30: FIX-2 at 2/s, seed 7, gave 0.46-0.59 queries/s across five calls)."""
    if len(runs) <= 1:
        return dict(runs[0]) if runs else {}
    ordered = sorted(runs, key=lambda run: run["throughput_qps"])
    row = dict(ordered[(len(ordered) - 1) // 2])
    row["median_of"] = len(runs)
    for field in ROUND_MEDIANS:
        row[field] = statistics.median(run[field] for run in runs)
        row[f"{field}_runs"] = [run[field] for run in runs]
    row["evictions_runs"] = [run["evictions"] for run in runs]
    row["positions"] = [run.get("position") for run in runs]
    row["rounds"] = list(runs)
    return row


def open_system(
    setup: Setup,
    queries: Sequence[str],
    count: int,
    rate: float,
    seed: int,
    capacity: str,
    policies: Optional[str] = None,
    seeds: Optional[Sequence[int]] = None,
    rates: Optional[Sequence[float]] = None,
    progress: Optional[Callable[[dict], None]] = None,
    rounds: int = 1,
) -> dict:
    """The open system under each admission policy; with several `seeds` or `rates`, one
    configuration per (rate, seed) over the same solo runs and plans ("configurations").
    With `rounds` > 1 every policy runs that many times per configuration, each round in its own
    shuffled order, and its row is the median over them (open_rounds_row).
    `progress`, if given, receives what has run so far after every policy's run (marked
    "partial"), so that a call cut short keeps it."""
    alone = solo_mqx(setup, queries, capacity)
    chosen = admissions(policies)
    configurations = []
    common = {
        "queries": list(queries),
        "count": count,
        "capacity": capacity,
        "peaks_mb": {q: _peak_mb(alone[q].stdout) for q in queries},
        "repeat": setup.repeat,
    }

    def configuration(at_rate: float, at_seed: int, runs: list) -> dict:
        """`runs`: every policy's runs so far, in the order they ran."""
        labels = [entry[0] for entry in chosen]
        rows = [open_rounds_row([run for run in runs if run["policy"] == label]) for label in labels]
        return {
            "rate_per_s": at_rate,
            "seed": at_seed,
            "gpu_fraction": fraction_summary([query for run in runs for query in run["runs"]]),
            "policies": [row for row in rows if row],
            "order": [run["policy"] for run in runs],
        }

    with tempfile.TemporaryDirectory(prefix="ssb-plans-") as directory:
        plans = {q: _plan_file(Path(directory), alone[q]) for q in queries}
        commands = [setup.command(q, plan=plans[q]) for q in queries]
        for at_rate in rates or [rate]:
            for at_seed in seeds or [seed]:
                # The policies run in a shuffled order (seeded by the configuration and the round), so
                # that drift over the call (a host that slows, a cold first run) spreads over them: at
                # 8c361b6 the default always ran last. Rows stay in the chosen order; `order` is the
                # order run in. Round 1's order is the one a single round always had.
                runs = []
                for round_index in range(rounds):
                    key = f"open-{at_rate}-{at_seed}" + (f"-round{round_index + 1}" if round_index else "")
                    for label, admission, fix_n in random.Random(key).sample(chosen, len(chosen)):
                        row = open_run(setup, commands, label, admission, fix_n, at_rate, count, at_seed, capacity)
                        runs.append({**row, "position": len(runs) + 1})
                        if progress:
                            progress({**common, "partial": True, "configurations": configurations + [configuration(at_rate, at_seed, runs)]})
                configurations.append(configuration(at_rate, at_seed, runs))
    if len(configurations) == 1:
        return {**common, **configurations[0]}
    return {**common, "configurations": configurations}


def _contended(setup: Setup, queries: Sequence[str], settings: dict, budget: Optional[str] = None) -> dict:
    with setup.daemon(budget or setup.budget, settings=settings) as node:
        results = run_concurrent([setup.command(q) for q in queries], env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
    _check(results)
    makespan = max(r.finished for r in results) - min(r.submitted for r in results)
    runs = [_timing(r) for r in results]

    def total(key: str) -> int:
        return sum(_statistics(r).get(key, 0) for r in results)

    return {
        "makespan_s": makespan,
        "throughput_qps": throughput(results),
        "evictions": total("evictions"),
        "bytes_moved": _moved(results),
        "bytes_to_device": total("bytes_to_device"),
        "bytes_to_host": total("bytes_to_host"),
        "bytes_written_back": total("bytes_written_back"),
        "bytes_dropped_clean": total("bytes_dropped_clean"),
        **_cross(node),
        "gpu_fraction": fraction_summary(runs),
        "runs": runs,
    }


def policies(setup: Setup, queries: Sequence[str]) -> dict:
    budget, budget_info = contended_budget(setup, queries)
    rows = [{"policy": p.upper(), **_contended(setup, queries, {"MQX_POLICY_REPLACEMENT": p}, budget)} for p in POLICIES]
    return {"queries": list(queries), **budget_info, "repeat": setup.repeat, "policies": rows}


def ablations(setup: Setup, queries: Sequence[str], variants: Optional[Sequence[str]] = None, rounds: int = 1,
              seed: int = 7) -> dict:
    """The paper's ablations (§7.4), `variants` of ABLATIONS (default all). With `rounds` > 1 each
    variant runs once per round, in a shuffled order each round (seeded), so that drift over the
    session spreads over the variants; a row's own keys are then its median-makespan run's, and
    "rounds" keeps every run (issue 31 asks for Full against NoPage as medians of three)."""
    budget, budget_info = contended_budget(setup, queries)
    names = list(variants or ABLATIONS)
    if rounds <= 1:
        rows = [{"variant": name, **_contended(setup, queries, ABLATIONS[name], budget)} for name in names]
        return {"queries": list(queries), **budget_info, "repeat": setup.repeat, "variants": rows}
    order = random.Random(seed)
    measured: dict[str, list[dict]] = {name: [] for name in names}
    sequence: list[str] = []  # the order they ran in: the call's first run starts cold
    for _ in range(rounds):
        for name in order.sample(names, len(names)):
            sequence.append(name)
            measured[name].append({**_contended(setup, queries, ABLATIONS[name], budget), "position": len(sequence)})
    rows = []
    for name in names:
        runs = measured[name]
        median = sorted(runs, key=lambda run: run.get("makespan_s", float("inf")))[len(runs) // 2]
        makespans = [run.get("makespan_s") for run in runs]
        rows.append({"variant": name, **median, "makespan_s_values": makespans, "rounds": runs})
    return {"queries": list(queries), **budget_info, "repeat": setup.repeat, "rounds": rounds, "order": sequence,
            "variants": rows}


def cdr(setup: Setup, queries: Sequence[str], rounds: int, seed: int) -> dict:
    """CDR against the other policies on the join-first variant (executor.hpp): every query's
    join index (rows and dimension positions, lineorder's length, written on the device and read
    operators later) next to base columns read once, all queries at once under a node budget below
    the sum of their join-first peaks. `rounds` rounds, each policy once per round in a shuffled
    order (seeded), so that drift over the session spreads over the policies."""
    joined = Setup(**{**setup.__dict__, "variant": setup.variant + ("--join-first",)})
    budget, budget_info = contended_budget(joined, queries)
    order = random.Random(seed)
    measured: dict[str, list[dict]] = {p: [] for p in POLICIES}
    for _ in range(rounds):
        for policy in order.sample(POLICIES, len(POLICIES)):
            measured[policy].append(_contended(joined, queries, {"MQX_POLICY_REPLACEMENT": policy}, budget))
    rows = []
    for policy in POLICIES:
        runs = measured[policy]

        def stat(key: str, runs=runs) -> dict:
            values = [run.get(key, 0) for run in runs]
            return {"mean": statistics.mean(values), "min": min(values), "max": max(values), "values": values}

        rows.append(
            {
                "policy": policy.upper(),
                "makespan_s": stat("makespan_s"),
                "bytes_moved": stat("bytes_moved"),
                "bytes_to_device": stat("bytes_to_device"),
                "bytes_written_back": stat("bytes_written_back"),
                "bytes_dropped_clean": stat("bytes_dropped_clean"),
                "evictions": stat("evictions"),
                "cross_process_evictions": stat("cross_process_evictions"),
                "gpu_fraction": fraction_summary([r for run in runs for r in run["runs"]]),
                "rounds": [{k: v for k, v in run.items() if k != "runs"} for run in runs],
            }
        )
    by_policy = {row["policy"]: row for row in rows}
    comparison = {}
    if "CDR" in by_policy and "LRU" in by_policy:
        cdr_row, lru_row = by_policy["CDR"], by_policy["LRU"]
        comparison = {
            "cdr_speedup_over_lru": lru_row["makespan_s"]["mean"] / cdr_row["makespan_s"]["mean"],
            "cdr_bytes_over_lru": cdr_row["bytes_moved"]["mean"] / lru_row["bytes_moved"]["mean"] if lru_row["bytes_moved"]["mean"] else None,
            "cdr_written_back_over_lru": (
                cdr_row["bytes_written_back"]["mean"] / lru_row["bytes_written_back"]["mean"] if lru_row["bytes_written_back"]["mean"] else None
            ),
        }
    return {"queries": list(queries), "variant": "join-first", **budget_info, "rounds": rounds, "repeat": setup.repeat, "comparison": comparison, "policies": rows}


def overhead(setup: Setup, queries: Sequence[str], pair_list: Sequence[tuple[str, str]], capacity: str) -> dict:
    native_runs: list = []
    native = solo_native(setup, queries, native_runs)
    mqx_runs = {q: [solo_mqx(setup, [q], capacity)[q] for _ in range(setup.repeats)] for q in queries}
    under = {q: statistics.mean(r.seconds for r in runs) for q, runs in mqx_runs.items()}
    rows = [{"query": q, "native_s": native[q], "mqx_s": under[q], "ratio": under[q] / native[q]} for q in queries]
    pair_rows = []
    for a, b in pair_list:
        native_pair = max(seconds for _, seconds, _ in _native(setup, [a, b]))
        with setup.daemon(capacity) as node:
            results = run_concurrent([setup.command(a), setup.command(b)], env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
        _check(results)
        mqx_pair = max(r.finished for r in results) - min(r.submitted for r in results)
        pair_rows.append({"pair": [a, b], "native_s": native_pair, "mqx_s": mqx_pair, "ratio": mqx_pair / native_pair})
    runs = [_timing(r) for results in mqx_runs.values() for r in results]
    return {
        "capacity": capacity,
        "repeat": setup.repeat,
        "gpu_fraction": fraction_summary(runs),
        "native_gpu_fraction": fraction_summary(native_runs),
        "queries": rows,
        "pairs": pair_rows,
        "runs": runs,
        "native_runs": native_runs,
    }


def sample_pairs(queries: Sequence[str], count: Optional[int], seed: int) -> list[tuple[str, str]]:
    """All pairs of `queries`, or a seeded sample of `count` of them (in the order of all_pairs)."""
    every = all_pairs(queries)
    if count is None or count >= len(every):
        return every
    chosen = set(random.Random(seed).sample(range(len(every)), count))
    return [pair for i, pair in enumerate(every) if i in chosen]


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
