"""python -m mqx top --once against a real mqxd: the view shows the admission queue, the running
queries with their weighted demands, the memory clients with what they hold, the budget, and the
eviction rates; a memory client's transfer and eviction rates and swap use (its published
activity), compared with what the client itself counted; no daemon is exit 69."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

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
    view = render(before, after, 2.0)
    assert "evictions for others: 0.0/s, 0.0 MiB/s" in view
    assert "transfers: host to device 0.0 MiB/s, device to host 0.0 MiB/s; evictions 0.0/s" in view


REGIONS, REGION_BYTES, ROUNDS = 4, 8 * MIB, 2  # 32 MiB on a 16 MiB node: it must evict


def _rate(count: float, seconds: float) -> str:
    return f"{count / seconds / MIB:.1f} MiB/s"


def _counters(text: str) -> dict[str, int]:
    """sim_client's last lines: "NAME VALUE" (its MemoryManager's statistics)."""
    counters = {}
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name and value.isdigit():
            counters[name] = int(value)
    return counters


def test_top_and_status_show_a_clients_transfers_evictions_and_swap(start_node, sim_client):
    node = start_node(capacity="16MiB")
    before, taken = mqx.status(instance=node.instance), time.monotonic()
    worker = subprocess.Popen(
        [sim_client, "work-hold", str(REGIONS), str(REGION_BYTES), str(ROUNDS), "5", "2000"],
        env={**os.environ, **node.env},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout.readline().strip() == "ready"
        # Published by the client's process within 100 ms of its passes.
        deadline = time.monotonic() + 5
        while True:
            after, sampled = mqx.status(instance=node.instance), time.monotonic()
            mine = [c for c in after.clients if c.pid == worker.pid]
            if mine and mine[0].activity.launches >= REGIONS * ROUNDS or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert mine, "the client's record is not in the status"
        activity = mine[0].activity
        assert activity.launches == REGIONS * ROUNDS
        assert activity.bytes_to_device >= REGIONS * REGION_BYTES
        assert activity.evictions > 0 and activity.bytes_written_back > 0
        assert activity.swap_used_bytes >= REGIONS * REGION_BYTES - 16 * MIB
        assert activity.swap_reserved_bytes >= activity.swap_used_bytes
        assert after.activity.bytes_to_device == activity.bytes_to_device  # the only client

        # top: the client joined between the samples, so its rates are its counters over the interval.
        seconds = sampled - taken
        view = render(before, after, seconds)
        row = next(line for line in view.split("memory clients (1):")[1].splitlines() if f" {worker.pid} " in line)
        assert _rate(activity.bytes_to_device, seconds) in row
        assert _rate(activity.bytes_to_host, seconds) in row
        assert f"{activity.evictions / seconds:.1f}/s" in row
        assert f"{activity.swap_used_bytes / MIB:.1f} MiB" in row
        assert activity.bytes_to_device / seconds >= 0.1 * MIB, "a rate top would show as zero"
        assert f"transfers: host to device {_rate(activity.bytes_to_device, seconds)}" in view
        assert f"swap buffers: {activity.swap_used_bytes / MIB:.1f} MiB used" in view

        # status: the same counters, as text and as JSON.
        env = {**os.environ, **node.env}
        shown = subprocess.run([sys.executable, "-m", "mqx", "status"], env=env, capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert f"transferred: {activity.bytes_to_device / MIB:.1f} MiB to device" in shown.stdout
        as_json = subprocess.run(
            [sys.executable, "-m", "mqx", "status", "--json"], env=env, capture_output=True, text=True
        )
        record = next(c for c in json.loads(as_json.stdout)["clients"] if c["pid"] == worker.pid)
        assert record["activity"]["launches"] == REGIONS * ROUNDS
        assert record["activity"]["bytes_to_device"] >= activity.bytes_to_device
    finally:
        output, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0
    counted = _counters(output)
    # Once the client left, the node's totals are exactly what it counted.
    final = mqx.status(instance=node.instance)
    assert final.clients == []
    assert final.activity.bytes_to_device == counted["bytes to device"]
    assert final.activity.bytes_to_host == counted["bytes to host"]
    assert final.activity.evictions == counted["evictions"]
    assert final.activity.launches == counted["launches"]
    assert final.activity.swap_used_bytes == 0


def test_top_without_daemon_is_exit_69(node):
    env = {**os.environ, **node.env, "MQX_DAEMON_INSTANCE": f"absent{os.getpid()}"}
    result = subprocess.run(
        [sys.executable, "-m", "mqx", "top", "--once", "--interval", "0.1"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 69
    assert "python -m mqx top:" in result.stderr
