"""python -m mqx top --once against a real mqxd: the view shows the admission queue, the running
queries with their weighted demands, the memory clients with what they hold, the budget, and the
eviction rates; no daemon is exit 69."""

from __future__ import annotations

import os
import subprocess
import sys

import mqx
from conftest import MIB, requires_daemon
from mqx.top import render

pytestmark = requires_daemon


def top(node, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqx", "top", "--once", "--interval", "0.2", *arguments],
        env={**os.environ, **node.env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_top_once_shows_queue_running_memory_and_budget(start_node, sim_client):
    node = start_node(capacity="64MiB")
    holder = subprocess.Popen(
        [sim_client, "hold-budget", str(8 * MIB), "0"], env={**os.environ, **node.env}, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with mqx.Client("runs", weighted="40MiB", peak="50MiB", instance=node.instance) as running:
            assert running.request_admission(timeout=10) >= 0.0
            with mqx.Client("waits", weighted="30MiB", peak="30MiB", instance=node.instance):
                result = top(node)
        assert result.returncode == 0, result.stderr
        view = result.stdout
        assert f"mqxd pid {node.pid}" in view
        assert "8.0 MiB of 64.0 MiB (12%)" in view
        assert "clients: 1 waiting, 1 running, 1 memory" in view
        assert "weighted demand: running 40.0 MiB, waiting 30.0 MiB" in view
        queue = view.split("admission queue (1):")[1].split("running queries")[0]
        assert "waits" in queue and "30.0 MiB" in queue and "runs" not in queue
        running_part = view.split("running queries (1):")[1].split("memory clients")[0]
        assert "runs" in running_part and "40.0 MiB" in running_part and "50.0 MiB" in running_part
        memory_part = view.split("memory clients (1):")[1]
        assert str(holder.pid) in memory_part and "8.0 MiB" in memory_part
    finally:
        holder.kill()
        holder.wait()


def test_rates_come_from_two_samples(node):
    before = mqx.status(instance=node.instance)
    after = mqx.status(instance=node.instance)
    # The same node sampled twice: every rate is zero, whatever the interval.
    assert "evictions for others: 0.0/s, 0.0 MiB/s" in render(before, after, 2.0)


def test_top_without_daemon_is_exit_69(node):
    env = {**os.environ, **node.env, "MQX_DAEMON_INSTANCE": f"absent{os.getpid()}"}
    result = subprocess.run(
        [sys.executable, "-m", "mqx", "top", "--once", "--interval", "0.1"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 69
    assert "python -m mqx top:" in result.stderr
