"""mqx.workload: query commands through mqx-run under each admission policy, and the paper's
metrics (§7.1) on results whose answer is known."""

from __future__ import annotations

import pytest

from conftest import requires_daemon
from mqx.workload import (
    QueryCommand,
    QueryResult,
    poisson_arrivals,
    run_closed,
    run_concurrent,
    run_poisson,
    run_sequential,
    solo_times,
    throughput,
    weighted_speedup,
)


@pytest.fixture
def sleeper(sim_client):
    """Makes queries that print when they ran (CLOCK_REALTIME ns, from inside the query: exact
    order). Each stands for a CUDA program: it runs behind the admission gate (mqx_sim_client
    gate), as a CUDA program's first call waits for its admission under mqx-run's default
    (docs/daemon.md, "Starting before admission"), so its start is on the device's side of it."""

    def make(name: str, seconds: float = 0.3, plan: str | None = None) -> QueryCommand:
        script = f"echo start $(date +%s%N); sleep {seconds}; echo end $(date +%s%N); echo done {name}"
        return QueryCommand(name, [sim_client, "gate", "/bin/sh", "-c", script], plan=plan)

    return make


def ran(result: QueryResult) -> tuple[int, int]:
    """(start, end) of the query's run, as it printed them."""
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    return int(lines["start"]), int(lines["end"])


def after(later: QueryResult, earlier: QueryResult) -> bool:
    return ran(later)[0] >= ran(earlier)[1]


def write_plan(directory, name: str, weighted_mib: int, peak_mib: int) -> str:
    """Two operators: the peak for 1 time unit, then the weighted part for 10⁶ (m ≈ weighted)."""
    path = directory / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[[operator]]\ntime = 1.0\nmemory = "{peak_mib}MiB"\n'
        f'[[operator]]\ntime = 1000000.0\nmemory = "{weighted_mib}MiB"\n'
    )
    return str(path)


def overlapped(a: QueryResult, b: QueryResult) -> bool:
    return ran(a)[0] < ran(b)[1] and ran(b)[0] < ran(a)[1]


def result(name: str, stream: int, submitted: float, finished: float, exit_code: int = 0) -> QueryResult:
    return QueryResult(name, stream, submitted, submitted, finished, exit_code, "", "")


@requires_daemon
def test_fix_1_runs_one_query_at_a_time(start_node, sleeper):
    node = start_node(admission="fix", fix_n=1)
    results = run_concurrent([sleeper(n, 0.2) for n in "abc"], env=node.env, timeout=30)
    assert [r.name for r in results] == ["a", "b", "c"]
    assert all(r.ok and r.stdout.endswith(f"done {r.name}\n") for r in results)
    by_start = sorted(results, key=lambda r: ran(r)[0])
    assert [r.name for r in by_start] == ["a", "b", "c"], "admitted in arrival order"
    for earlier, later in zip(by_start, by_start[1:]):
        assert after(later, earlier), (earlier, later)
    assert results[2].waited >= 0.3  # behind two 0.2 s queries
    assert all(r.submitted <= r.started <= r.finished for r in results)


@requires_daemon
def test_fix_2_overlaps_two(start_node, sleeper):
    node = start_node(admission="fix", fix_n=2)
    a, b, c = run_concurrent([sleeper(n, 0.4) for n in "abc"], env=node.env, timeout=30)
    assert overlapped(a, b)
    assert after(c, a) or after(c, b)


@requires_daemon
def test_weight_uses_the_plans_weighted_demand(start_node, tmp_path, sleeper):
    node = start_node(admission="weight", capacity="100MiB")
    queries = [
        sleeper("a", 0.5, write_plan(tmp_path, "a", 60, 90)),
        sleeper("b", 0.5, write_plan(tmp_path, "b", 60, 90)),
        sleeper("c", 0.5, write_plan(tmp_path, "c", 30, 30)),  # would fit beside a, but b came first
    ]
    a, b, c = run_concurrent(queries, env=node.env, timeout=30)
    assert all(r.ok for r in (a, b, c))
    assert after(b, a) and after(c, a)
    assert overlapped(b, c), "b (60) and c (30) run together"


@requires_daemon
def test_peak_uses_the_plans_peak_demand(start_node, tmp_path, sleeper):
    node = start_node(admission="peak", capacity="100MiB")
    queries = [sleeper(n, 0.3, write_plan(tmp_path, n, 30, 60)) for n in "ab"]
    a, b = run_concurrent(queries, env=node.env, timeout=30)
    assert after(b, a)


@requires_daemon
def test_failures_and_timeouts_are_reported(node):
    failing = QueryCommand("fails", ["/bin/sh", "-c", "echo oops >&2; exit 3"])
    hanging = QueryCommand("hangs", ["/bin/sleep", "30"])
    missing = QueryCommand("missing", ["/nonexistent/query"])
    fails, hangs, gone = run_sequential([failing, hanging, missing], env=node.env, timeout=1.0)
    assert (fails.exit_code, fails.ok, "oops" in fails.stderr) == (3, False, True)
    assert hangs.timed_out and not hangs.ok and hangs.seconds < 5
    assert gone.exit_code == 127


def test_without_a_daemon_mqx_run_exits_69(sleeper):
    pytest.importorskip("mqx._mqx")
    from mqx.binaries import find_binary

    try:
        find_binary("mqx-run")
    except FileNotFoundError:
        pytest.skip("mqx-run not built")
    (only,) = run_sequential([sleeper("alone", 0.0)], env={"MQX_DAEMON_INSTANCE": "absent-workload"})
    assert only.exit_code == 69 and "no mqxd is running" in only.stderr


@requires_daemon
def test_poisson_stream_is_seeded(start_node, sleeper):
    node = start_node(admission="fix", fix_n=2)
    queries = [sleeper(n, 0.05) for n in ("q1", "q2", "q3")]
    first = run_poisson(queries, rate=20.0, count=8, seed=11, env=node.env, timeout=30)
    second = run_poisson(queries, rate=20.0, count=8, seed=11, env=node.env, timeout=30)
    assert [r.name for r in first] == [r.name for r in second]
    assert len({r.name for r in first}) > 1
    assert all(r.ok for r in first + second)
    arrivals = poisson_arrivals(8, 20.0, 11)
    for r, at in zip(first, arrivals):
        assert r.submitted >= at - 0.01
    assert throughput(first) > 0


def test_poisson_arrivals_have_the_rate():
    times = poisson_arrivals(20000, 4.0, seed=3)
    assert times == poisson_arrivals(20000, 4.0, seed=3)
    assert times != poisson_arrivals(20000, 4.0, seed=4)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(g >= 0 for g in gaps)
    assert abs(sum(gaps) / len(gaps) - 0.25) < 0.01, "mean gap 1/rate"
    with pytest.raises(ValueError):
        poisson_arrivals(3, 0.0, seed=1)


@requires_daemon
def test_closed_streams_and_weighted_speedup_of_fix_1(start_node, sleeper):
    # One query at a time: Σ sᵢ/cᵢ is 1 in the steady state (§7.1); the first and last runs of each
    # stream see less competition, so a few repeats stay within a band around it.
    node = start_node(admission="fix", fix_n=1)
    queries = [sleeper("x", 0.15), sleeper("y", 0.15)]
    solo = solo_times(queries, env=node.env, timeout=30)
    results = run_closed(queries, repeats=4, env=node.env, timeout=30)
    assert len(results) == 8 and {r.stream for r in results} == {0, 1}
    assert 0.8 < weighted_speedup(solo, results) < 1.4
    two_at_once = start_node(admission="fix", fix_n=2)
    together = run_closed(queries, repeats=4, env=two_at_once.env, timeout=30)
    assert weighted_speedup(solo, together) > 1.5, "sleeping queries overlap completely"


def test_weighted_speedup_and_throughput_formulas():
    solo = {"p": 2.0, "q": 1.0}
    # Stream 0 ran p twice in 4 s each, stream 1 ran q twice in 2 s and 3 s: 2/4 + 1/2.5.
    results = [
        result("p", 0, 0.0, 4.0),
        result("p", 0, 4.0, 8.0),
        result("q", 1, 0.0, 2.0),
        result("q", 1, 2.0, 5.0),
    ]
    assert weighted_speedup(solo, results) == pytest.approx(0.5 + 0.4)
    # Four completed queries from t=0 to t=8.
    assert throughput(results) == pytest.approx(0.5)
    assert throughput(results + [result("q", 2, 1.0, 10.0, exit_code=1)]) == pytest.approx(4 / 10)
    assert throughput([]) == 0.0
    with pytest.raises(KeyError):
        weighted_speedup({"p": 1.0}, results)
    with pytest.raises(ValueError, match="several queries"):
        weighted_speedup(solo, [result("p", 0, 0, 1), result("q", 0, 1, 2)])


def test_query_command_line():
    query = QueryCommand("q", ["./query", 3], plan="plan.toml")
    expected = ["/bin/mqx-run", "--stats", "--name", "q", "--plan", "plan.toml", "--", "./query", "3"]
    assert query.command("/bin/mqx-run") == expected
