"""Workloads of query commands under mqxd, and the metrics of the MultiQx-GPU paper (§7).

Every query runs through ``mqx-run --stats`` (so it is admitted by mqxd under the node's admission
policy and runs with libmqx.so preloaded); the admission policy is the daemon's, chosen when it is
started (``Daemon(admission=..., fix_n=...)``). The API, all of it::

    QueryCommand(name, argv, plan=None, env={})      one query: its name, command line, plan file
    QueryResult                                       one run: submitted/started/finished (seconds
                                                      from the workload's start), exit_code, stdout,
                                                      stderr, waited (admission wait), seconds (turnaround)
    run_sequential(queries, ...)    one after another (each submitted when the previous ended)
    run_concurrent(queries, ...)    all submitted at once, in list order
    run_poisson(queries, rate, count, seed, ...)
                                    an open system (§7.5): `count` arrivals, exponential gaps at `rate`
                                    per second, each a query drawn uniformly from `queries` (seeded)
    run_closed(queries, repeats, ...)
                                    a closed system (§7.1): one stream per query, each running its
                                    query `repeats` times back to back, all streams at once
    solo_times(queries, repeats, ...)   {name: mean seconds} of each query run alone
    weighted_speedup(solo, results)     Σ sᵢ/cᵢ over the streams of a closed run (§7.1)
    throughput(results)                 queries per second of an open run (§7.1)
    Daemon(admission, fix_n, capacity, ...)   an mqxd started from Python (mqx.daemon)

The run functions share their keyword arguments: ``env`` (MQX_* variables, e.g. ``Daemon.env``,
laid over os.environ), ``mqx_run`` (the path; default: found as in mqx.binaries), ``timeout``
(seconds per query; a query past it gets SIGTERM, then SIGKILL, and is reported with
``timed_out``) and ``ordered`` (run_concurrent, run_poisson: wait until mqxd registered each query
before the next is submitted, so that arrival order at the daemon is submission order; needs the
extension).

Example, the paper's scheduling experiment (§7.5) on four queries::

    from mqx.workload import Daemon, QueryCommand, run_poisson, throughput
    queries = [QueryCommand("q1.1", ["bench/ssb/q1.1", "data"], plan="plans/q1.1.toml"), ...]
    for policy, n in [("fix", 1), ("fix", 2), ("peak", 0), ("weight", 0)]:
        with Daemon(admission=policy, fix_n=max(n, 1), capacity="8GiB") as node:
            results = run_poisson(queries, rate=4.0, count=100, seed=7, env=node.env)
        print(policy, n, throughput(results))
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from statistics import mean
from typing import Mapping, Optional, Sequence

from .binaries import PathLike, find_binary
from .daemon import Daemon

__all__ = [
    "Daemon",
    "QueryCommand",
    "QueryResult",
    "run_sequential",
    "run_concurrent",
    "run_poisson",
    "poisson_trace",
    "run_closed",
    "solo_times",
    "weighted_speedup",
    "throughput",
]


@dataclass(frozen=True)
class QueryCommand:
    """One query: ``name`` (mqxd learns demand per name), ``argv`` (the query's command line),
    ``plan`` (an operator plan file for mqx-run --plan, docs/daemon.md) and extra ``env``."""

    name: str
    argv: Sequence[str]
    plan: Optional[str] = None
    env: Mapping[str, str] = field(default_factory=dict)

    def command(self, mqx_run: str) -> list[str]:
        """The mqx-run command line that runs this query."""
        line = [mqx_run, "--stats", "--name", self.name]
        if self.plan is not None:
            line += ["--plan", str(self.plan)]
        return line + ["--", *map(str, self.argv)]


@dataclass
class QueryResult:
    """One run of a query. Times are seconds since the workload started (time.monotonic)."""

    name: str
    stream: int  # run_closed: the stream; otherwise the query's position in the submission order
    submitted: float
    started: float  # submitted + the admission wait mqx-run reported (submitted when unknown)
    finished: float
    exit_code: int  # mqx-run's: the query's status, 128+signal, 69 without mqxd
    stdout: str
    stderr: str
    waited: Optional[float] = None  # seconds waiting for admission (mqx-run --stats)
    ran: Optional[float] = None  # seconds the query ran (mqx-run --stats)
    timed_out: bool = False

    @property
    def seconds(self) -> float:
        """Turnaround: submission to end, admission wait included (cᵢ of §7.1)."""
        return self.finished - self.submitted

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


_STATS = re.compile(r"mqx-run: query '.*': waited ([0-9.]+) s for admission, ran ([0-9.]+) s")


def _stop(process: subprocess.Popen[str], grace: float = 2.0) -> tuple[str, str]:
    """Stops a query past its timeout: SIGTERM (mqx-run forwards it to the query, which may clean
    up), then SIGKILL to the whole process group, whose members would keep the pipes open."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return process.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return process.communicate()


class _Runner:
    """Runs QueryCommands through mqx-run, one thread per query in flight."""

    def __init__(
        self,
        env: Optional[Mapping[str, str]],
        mqx_run: Optional[PathLike],
        timeout: Optional[float],
        ordered: bool,
    ) -> None:
        self.env = dict(env or {})
        self.mqx_run = str(mqx_run) if mqx_run is not None else find_binary("mqx-run")
        self.timeout = timeout
        self.ordered = ordered
        if ordered:
            try:
                from . import _mqx  # noqa: F401, PLC0415
            except ImportError as error:
                raise ImportError(
                    "ordered=True reads mqxd's segment through the extension mqx._mqx, which is not importable "
                    f"here ({error}); put the built package first on sys.path or pass ordered=False"
                ) from error
        self.start = time.monotonic()
        self.results: list[QueryResult] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def now(self) -> float:
        return time.monotonic() - self.start

    def run(self, query: QueryCommand, stream: int) -> QueryResult:
        """Runs one query to its end (blocking)."""
        process, submitted = self._spawn(query)
        return self._finish(query, stream, process, submitted)

    def submit(self, query: QueryCommand, stream: int) -> None:
        """Starts one query and returns (after mqxd registered it, when ordered)."""
        process, submitted = self._spawn(query)
        if self.ordered:
            self._wait_until_registered(process)
        thread = threading.Thread(target=self._finish, args=(query, stream, process, submitted), daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self) -> list[QueryResult]:
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        return sorted(self.results, key=lambda r: (r.submitted, r.stream))

    def _spawn(self, query: QueryCommand) -> tuple[subprocess.Popen[str], float]:
        environment = {**os.environ, **self.env, **query.env}
        submitted = self.now()
        process = subprocess.Popen(
            query.command(self.mqx_run),
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: a timeout stops the query with mqx-run
        )
        return process, submitted

    def _finish(
        self, query: QueryCommand, stream: int, process: subprocess.Popen[str], submitted: float
    ) -> QueryResult:
        timed_out = False
        try:
            stdout, stderr = process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = _stop(process)
            timed_out = True
        finished = self.now()
        waited = ran = None
        stats = _STATS.search(stderr)
        if stats:
            waited, ran = float(stats.group(1)), float(stats.group(2))
        result = QueryResult(
            name=query.name,
            stream=stream,
            submitted=submitted,
            started=submitted + (waited or 0.0),
            finished=finished,
            exit_code=process.returncode,
            stdout=stdout,
            stderr=stderr,
            waited=waited,
            ran=ran,
            timed_out=timed_out,
        )
        with self._lock:
            self.results.append(result)
        return result

    def _wait_until_registered(self, process: subprocess.Popen[str], timeout: float = 10.0) -> None:
        # mqx-run claims its record as the process itself (the record's pid is mqx-run's):
        # once it is in the segment, the daemon orders it before anything submitted later.
        from . import _mqx  # noqa: PLC0415

        instance = {**os.environ, **self.env}.get("MQX_DAEMON_INSTANCE", "")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if any(c.pid == process.pid for c in _mqx.status(instance=instance).clients):
                    return
            except _mqx.DaemonNotRunning:
                return  # mqx-run will say so itself (exit 69)
            time.sleep(0.001)


def run_sequential(
    queries: Sequence[QueryCommand],
    *,
    env: Optional[Mapping[str, str]] = None,
    mqx_run: Optional[PathLike] = None,
    timeout: Optional[float] = None,
) -> list[QueryResult]:
    """Runs the queries one after another; results in order."""
    runner = _Runner(env, mqx_run, timeout, ordered=False)
    return [runner.run(query, i) for i, query in enumerate(queries)]


def run_concurrent(
    queries: Sequence[QueryCommand],
    *,
    env: Optional[Mapping[str, str]] = None,
    mqx_run: Optional[PathLike] = None,
    timeout: Optional[float] = None,
    ordered: bool = True,
) -> list[QueryResult]:
    """Submits every query at once (in list order) and waits for all; results by submission."""
    runner = _Runner(env, mqx_run, timeout, ordered)
    for i, query in enumerate(queries):
        runner.submit(query, i)
    return runner.join()


def poisson_arrivals(count: int, rate: float, seed: int) -> list[float]:
    """`count` arrival times (seconds from 0) of a Poisson process of `rate` per second."""
    if rate <= 0:
        raise ValueError(f"rate must be positive, got {rate}")
    generator = random.Random(seed)
    times, now = [], 0.0
    for _ in range(count):
        times.append(now)
        now += generator.expovariate(rate)
    return times


def poisson_trace(kinds: int, count: int, rate: float, seed: int) -> list[tuple[float, int]]:
    """run_poisson's trace: each arrival's time and the index of its query among `kinds`, drawn
    uniformly (seeded apart from the times), so that a model can replay a committed run."""
    generator = random.Random(seed ^ 0x5EED)
    picks = [generator.randrange(kinds) for _ in range(count)]
    return list(zip(poisson_arrivals(count, rate, seed), picks))


def run_poisson(
    queries: Sequence[QueryCommand],
    rate: float,
    count: int,
    seed: int,
    *,
    env: Optional[Mapping[str, str]] = None,
    mqx_run: Optional[PathLike] = None,
    timeout: Optional[float] = None,
    ordered: bool = False,
) -> list[QueryResult]:
    """An open system (§7.5): `count` queries drawn uniformly (seeded) from `queries`, arriving as a
    Poisson process of `rate` per second. The same seed gives the same trace under every policy."""
    if not queries:
        raise ValueError("run_poisson needs at least one query")
    runner = _Runner(env, mqx_run, timeout, ordered)
    for i, (at, pick) in enumerate(poisson_trace(len(queries), count, rate, seed)):
        delay = at - runner.now()
        if delay > 0:
            time.sleep(delay)
        runner.submit(queries[pick], i)
    return runner.join()


def run_closed(
    queries: Sequence[QueryCommand],
    repeats: int,
    *,
    env: Optional[Mapping[str, str]] = None,
    mqx_run: Optional[PathLike] = None,
    timeout: Optional[float] = None,
) -> list[QueryResult]:
    """A closed system (§7.1): stream i runs queries[i] `repeats` times back to back, all streams at
    once, so that every query overlaps the others for its whole run."""
    runner = _Runner(env, mqx_run, timeout, ordered=False)

    def stream(index: int, query: QueryCommand) -> None:
        for _ in range(repeats):
            runner.run(query, index)

    threads = [threading.Thread(target=stream, args=(i, q), daemon=True) for i, q in enumerate(queries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return runner.join()


def solo_times(
    queries: Sequence[QueryCommand],
    repeats: int = 1,
    *,
    env: Optional[Mapping[str, str]] = None,
    mqx_run: Optional[PathLike] = None,
    timeout: Optional[float] = None,
) -> dict[str, float]:
    """sᵢ of §7.1: the mean turnaround of each query (by name) run alone, `repeats` times."""
    runner = _Runner(env, mqx_run, timeout, ordered=False)
    seconds: dict[str, list[float]] = {}
    for query in queries:
        for _ in range(repeats):
            result = runner.run(query, 0)
            if not result.ok:
                why = f"exit {result.exit_code}" + (", timed out" if result.timed_out else "")
                raise RuntimeError(f"query {query.name} failed alone ({why}): {result.stderr.strip()}")
            seconds.setdefault(query.name, []).append(result.seconds)
    return {name: mean(values) for name, values in seconds.items()}


def weighted_speedup(solo: Mapping[str, float], results: Sequence[QueryResult]) -> float:
    """Σᵢ sᵢ/cᵢ (§7.1): for every stream i, its query's time alone sᵢ over the mean turnaround cᵢ of
    its runs. Running the queries one at a time gives 1; higher is better."""
    by_stream: dict[int, list[QueryResult]] = {}
    for result in results:
        by_stream.setdefault(result.stream, []).append(result)
    total = 0.0
    for stream, runs in sorted(by_stream.items()):
        names = {r.name for r in runs}
        if len(names) != 1:
            raise ValueError(f"stream {stream} ran several queries ({sorted(names)}); use run_closed's results")
        name = names.pop()
        if name not in solo:
            raise KeyError(f"no solo time for query {name}")
        total += solo[name] / mean(r.seconds for r in runs)
    return total


def throughput(results: Sequence[QueryResult]) -> float:
    """Queries per second (§7.1, open system): queries completed over the time from the first
    submission to the last completion."""
    if not results:
        return 0.0
    span = max(r.finished for r in results) - min(r.submitted for r in results)
    completed = sum(1 for r in results if r.ok)
    return completed / span if span > 0 else float("inf")
