"""mqx.Client and mqx.status against a real mqxd: admission order under Weight, Peak and FIX-n
(paper §5), demand updates, clients that die, a daemon that is absent or dies, python -m mqx."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

import pytest

import mqx
from mqx.daemon import Daemon
from conftest import MIB, requires_daemon

pytestmark = requires_daemon


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def states(node) -> dict[str, str]:
    return {c.name: c.state for c in mqx.status(instance=node.instance).clients}


class Admission:
    """request_admission() on a thread (it releases the GIL), recording when it returned."""

    def __init__(self, client: mqx.Client, timeout: Optional[float] = 30.0) -> None:
        self.client = client
        self.admitted_at: Optional[float] = None
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._run, args=(timeout,), daemon=True)
        self.thread.start()

    def _run(self, timeout: Optional[float]) -> None:
        try:
            self.client.request_admission(timeout=timeout)
            self.admitted_at = time.monotonic()
        except BaseException as error:  # noqa: BLE001 (reported to the test)
            self.error = error

    def done(self) -> bool:
        return not self.thread.is_alive()

    def join(self, timeout: float = 20.0) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.client.name} still waiting"


def hold_budget(sim_client: str, node, count: int) -> subprocess.Popen[str]:
    """A memory client that takes `count` bytes of the node budget and prints "held"."""
    return subprocess.Popen(
        [sim_client, "hold-budget", str(count), "0"], env={**os.environ, **node.env}, stdout=subprocess.PIPE, text=True
    )


def demands(node) -> dict[str, int]:
    return {c.name: c.weighted_demand for c in mqx.status(instance=node.instance).clients}


def test_absent_daemon_is_an_exception_not_a_hang():
    instance = f"absent{os.getpid()}"
    start = time.monotonic()
    with pytest.raises(mqx.DaemonNotRunning, match=f"instance '{instance}'"):
        mqx.Client("q", instance=instance)
    with pytest.raises(mqx.DaemonNotRunning, match="no mqxd is running"):
        mqx.status(instance=instance)
    assert time.monotonic() - start < 2.0
    assert issubclass(mqx.DaemonNotRunning, mqx.MqxError)


def test_status_shows_clients_demands_and_budget(node, sim_client):
    holder = hold_budget(sim_client, node, 20 * MIB)
    try:
        assert holder.stdout.readline().strip() == "held"
        with mqx.Client("q-status", weighted="30MiB", peak=40 * MIB, instance=node.instance) as query:
            assert query.request_admission(timeout=10) >= 0.0
            assert query.state == "running"
            status = mqx.status(instance=node.instance)
            assert status.capacity == 100 * MIB
            assert status.daemon_pid == node.pid
            assert status.used == 20 * MIB
            by_name = {c.name: c for c in status.clients}
            assert by_name["q-status"].state == "running"
            assert by_name["q-status"].pid == os.getpid()
            assert (by_name["q-status"].weighted_demand, by_name["q-status"].peak_demand) == (30 * MIB, 40 * MIB)
            assert by_name["q-status"].slot == query.slot
            assert by_name["sim_client"].state == "memory"
            assert by_name["sim_client"].pid == holder.pid
            assert by_name["sim_client"].budget_held == 20 * MIB
            assert by_name["sim_client"].query_slot is None
            assert status.as_dict()["clients"][0]["slot"] == status.clients[0].slot
        assert query.state == "released"
        assert "q-status" not in states(node)
    finally:
        holder.kill()
        holder.wait()


def test_weight_admits_in_arrival_order_without_overtaking(start_node):
    node = start_node(admission="weight", capacity="100MiB")
    a = mqx.Client("a", weighted="60MiB", peak="90MiB", instance=node.instance)
    a.request_admission(timeout=10)
    b = mqx.Client("b", weighted="60MiB", peak="90MiB", instance=node.instance)
    c = mqx.Client("c", weighted="30MiB", peak="30MiB", instance=node.instance)  # fits beside a, but b came first
    wait_b = Admission(b)
    # b asks first: its thread's request must reach the node before c's (two
    # threads started together may ask in either order; CI once saw c first).
    assert wait_for(lambda: states(node).get("b") == "waiting"), states(node)
    wait_c = Admission(c)
    # c has joined and asked (a loaded machine may take longer than any fixed
    # sleep), then mqxd has had several passes to admit it wrongly.
    assert wait_for(lambda: states(node).get("c") == "waiting"), states(node)
    time.sleep(0.5)
    assert states(node) == {"a": "running", "b": "waiting", "c": "waiting"}
    released = time.monotonic()
    a.release()
    wait_b.join()
    wait_c.join()
    assert wait_b.error is None and wait_c.error is None
    # b (60) and c (30) fit together: both start once a ended.
    assert wait_b.admitted_at >= released and wait_c.admitted_at >= released
    assert states(node) == {"b": "running", "c": "running"}
    b.release()
    c.release()


@pytest.mark.parametrize("admission, together", [("weight", True), ("peak", False)])
def test_peak_admits_by_peak_demand(start_node, admission, together):
    node = start_node(admission=admission, capacity="100MiB")
    # Weighted 30 each (Weight runs them together), peak 60 each (Peak does not).
    a = mqx.Client("a", weighted="30MiB", peak="60MiB", instance=node.instance)
    a.request_admission(timeout=10)
    b = mqx.Client("b", weighted="30MiB", peak="60MiB", instance=node.instance)
    if together:
        b.request_admission(timeout=10)
        assert states(node) == {"a": "running", "b": "running"}
    else:
        with pytest.raises(mqx.AdmissionTimeout, match="not admitted within"):
            b.request_admission(timeout=0.5)
        assert b.state == "closed"
        assert states(node) == {"a": "running"}, "a timed-out query is withdrawn"
    a.release()
    b.release()


def test_fix_n_runs_at_most_n_queries(start_node):
    node = start_node(admission="fix", fix_n=2)
    a, b, c = (mqx.Client(name, instance=node.instance) for name in "abc")
    a.request_admission(timeout=10)
    b.request_admission(timeout=10)
    wait_c = Admission(c)
    assert wait_for(lambda: states(node).get("c") == "waiting"), states(node)
    time.sleep(0.4)
    assert not wait_c.done()
    assert states(node) == {"a": "running", "b": "running", "c": "waiting"}
    b.release()
    wait_c.join()
    assert wait_c.error is None
    assert states(node) == {"a": "running", "c": "running"}
    a.release()
    c.release()


def test_demand_updates_admit_and_postpone(start_node):
    node = start_node(admission="weight", capacity="100MiB")
    big = mqx.Client("big", weighted="80MiB", peak="80MiB", instance=node.instance)
    big.request_admission(timeout=10)
    small = mqx.Client("small", weighted="50MiB", peak="50MiB", instance=node.instance)
    wait_small = Admission(small)
    assert wait_for(lambda: "small" in states(node)), states(node)
    time.sleep(0.4)
    assert states(node)["small"] == "waiting", "80 + 50 MiB exceed 100 MiB"
    # The running query needs less now: the postponed one fits.
    big.update_demand(weighted="40MiB", peak="40MiB")
    wait_small.join(10)
    assert wait_small.error is None
    record = {c.name: c for c in mqx.status(instance=node.instance).clients}["big"]
    assert (record.weighted_demand, record.peak_demand) == (40 * MIB, 40 * MIB)
    # And more again: a new arrival waits.
    small.update_demand(weighted="60MiB", peak="60MiB")
    assert wait_for(lambda: demands(node)["small"] == 60 * MIB)
    late = mqx.Client("late", weighted="10MiB", peak="10MiB", instance=node.instance)
    with pytest.raises(mqx.AdmissionTimeout):
        late.request_admission(timeout=0.5)
    big.release()
    small.release()


def test_a_waiting_query_can_lower_its_demand(start_node):
    node = start_node(admission="weight", capacity="100MiB")
    first = mqx.Client("first", weighted="70MiB", instance=node.instance)
    first.request_admission(timeout=10)
    second = mqx.Client("second", weighted="50MiB", instance=node.instance)
    wait_second = Admission(second)
    time.sleep(0.3)
    assert not wait_second.done()
    second.update_demand(weighted="20MiB", peak="20MiB")
    wait_second.join(10)
    assert wait_second.error is None
    first.release()
    second.release()


CHILD_QUERY = """
import sys, time, mqx
client = mqx.Client("doomed", weighted="90MiB", peak="90MiB", instance=sys.argv[1])
client.request_admission(timeout=10)
print("admitted", flush=True)
time.sleep(60)
"""


def test_a_killed_query_is_reclaimed_and_the_next_admitted(node):
    doomed = subprocess.Popen([sys.executable, "-c", CHILD_QUERY, node.instance], stdout=subprocess.PIPE, text=True)
    try:
        assert doomed.stdout.readline().strip() == "admitted"
        waiting = mqx.Client("next", weighted="50MiB", instance=node.instance)
        wait_next = Admission(waiting)
        time.sleep(0.3)
        assert not wait_next.done(), "90 + 50 MiB exceed 100 MiB"
        dead_before = mqx.status(instance=node.instance).dead_clients
        doomed.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        wait_next.join(10)
        assert wait_next.error is None
        assert wait_next.admitted_at - killed < 2.0, "admitted within a few liveness intervals"
        status = mqx.status(instance=node.instance)
        assert status.dead_clients == dead_before + 1
        assert [c.name for c in status.clients] == ["next"]
        waiting.release()
    finally:
        doomed.kill()
        doomed.wait()


def test_a_killed_memory_client_budget_is_reclaimed(node, sim_client):
    holder = hold_budget(sim_client, node, 20 * MIB)
    assert holder.stdout.readline().strip() == "held"
    assert mqx.status(instance=node.instance).used == 20 * MIB
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert wait_for(lambda: mqx.status(instance=node.instance).used == 0, timeout=2.0)
    status = mqx.status(instance=node.instance)
    assert status.reclaimed_bytes >= 20 * MIB
    assert status.dead_clients >= 1
    assert status.clients == []


def test_a_daemon_that_dies_ends_the_wait_with_an_exception(start_node):
    node = start_node(admission="fix", fix_n=1)
    first = mqx.Client("first", instance=node.instance)
    first.request_admission(timeout=10)
    second = mqx.Client("second", instance=node.instance)
    wait_second = Admission(second, timeout=None)  # no timeout: only the daemon's death ends it
    time.sleep(0.3)
    node.kill()
    wait_second.join(5)
    assert isinstance(wait_second.error, mqx.DaemonNotRunning), wait_second.error
    assert "went away" in str(wait_second.error)
    with pytest.raises(mqx.DaemonNotRunning, match="is gone"):
        mqx.status(instance=node.instance)  # the stale segment of a dead daemon
    with pytest.raises(mqx.DaemonNotRunning):
        mqx.Client("third", instance=node.instance)
    first.close()
    # A new mqxd of the instance recovers the dead one's stale segment.
    recovered = Daemon(instance=node.instance, settings={"MQX_LOG_LEVEL": "error"})
    assert mqx.status(instance=node.instance).daemon_pid == recovered.pid
    assert recovered.stop() == 0


def test_requesting_twice_and_using_a_closed_client_are_errors(node):
    client = mqx.Client("twice", instance=node.instance)
    client.request_admission(timeout=10)
    with pytest.raises(mqx.MqxError, match="already requested"):
        client.request_admission(timeout=1)
    client.release()
    client.release()  # idempotent
    with pytest.raises(mqx.MqxError, match="left the node"):
        client.update_demand(1, 1)
    with pytest.raises(TypeError):
        mqx.Client("bad", weighted=1.5, instance=node.instance)
    with pytest.raises(mqx.ConfigError, match="weighted"):
        mqx.Client("bad", weighted="lots", instance=node.instance)
    with pytest.raises(mqx.ConfigError, match="daemon.instance|MQX_DAEMON_INSTANCE"):
        mqx.Client("bad", instance="no/slashes")


def python_m_mqx(*args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mqx", *args]
    return subprocess.run(command, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=30)


def test_python_m_mqx_status_shows_the_live_state(node, sim_client):
    holder = hold_budget(sim_client, node, 8 * MIB)
    try:
        assert holder.stdout.readline().strip() == "held"
        with mqx.Client("shown", weighted="12MiB", peak="24MiB", instance=node.instance) as query:
            query.request_admission(timeout=10)
            text = python_m_mqx("status", env=node.env)
            assert text.returncode == 0, text.stderr
            assert f"mqxd pid {node.pid}" in text.stdout
            assert "budget: 8.0 MiB used of 100.0 MiB" in text.stdout
            assert "shown" in text.stdout and "running" in text.stdout and "12.0 MiB" in text.stdout
            assert str(holder.pid) in text.stdout and "memory" in text.stdout
            as_json = python_m_mqx("status", "--json", "--instance", node.instance)
            assert as_json.returncode == 0, as_json.stderr
            parsed = json.loads(as_json.stdout)
            assert parsed["capacity"] == 100 * MIB and parsed["used"] == 8 * MIB
            shown = [c for c in parsed["clients"] if c["name"] == "shown"][0]
            assert (shown["state"], shown["weighted_demand"], shown["peak_demand"]) == ("running", 12 * MIB, 24 * MIB)
    finally:
        holder.kill()
        holder.wait()


def test_python_m_mqx_status_without_a_daemon_exits_69():
    result = python_m_mqx("status", "--instance", f"absent{os.getpid()}")
    assert result.returncode == 69
    assert "no mqxd is running" in result.stderr
    assert result.stdout == ""


CHILD_WAITING = """
import sys, mqx
first = mqx.Client("first", instance=sys.argv[1])
first.request_admission(timeout=10)
second = mqx.Client("second", instance=sys.argv[1])
try:
    print("waiting", flush=True)
    second.request_admission()          # FIX-1: waits until interrupted
except KeyboardInterrupt:
    print("interrupted", second.state, flush=True)
    first.release()
"""


def test_ctrl_c_interrupts_a_wait_and_withdraws_the_query(start_node):
    node = start_node(admission="fix", fix_n=1)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_WAITING, node.instance], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "waiting"
        assert wait_for(lambda: states(node) == {"first": "running", "second": "waiting"})
        time.sleep(0.3)  # inside request_admission by now
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=10)
        assert child.returncode == 0, stderr
        assert stdout.strip() == "interrupted closed"
        assert states(node) == {}
    finally:
        child.kill()
        child.wait()


def test_status_and_client_take_a_config(node):
    config = mqx.load_config(environment={"MQX_DAEMON_INSTANCE": node.instance})
    assert mqx.status(config=config).capacity == 100 * MIB
    with mqx.Client("configured", config=config) as query:
        query.request_admission(timeout=10)
        assert query.instance == node.instance
        assert states(node) == {"configured": "running"}


def test_closing_from_another_thread_ends_a_wait(start_node):
    node = start_node(admission="fix", fix_n=1)
    first = mqx.Client("first", instance=node.instance)
    first.request_admission(timeout=10)
    second = mqx.Client("second", instance=node.instance)
    wait_second = Admission(second, timeout=None)
    assert wait_for(lambda: states(node).get("second") == "waiting")
    time.sleep(0.2)
    second.close()  # the record goes while the other thread polls it
    wait_second.join(5)
    assert isinstance(wait_second.error, mqx.MqxError) and not isinstance(wait_second.error, mqx.DaemonNotRunning)
    assert states(node) == {"first": "running"}
    first.release()
