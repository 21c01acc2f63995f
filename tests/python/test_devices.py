"""A node of two simulated devices (docs/daemon.md, "Several GPUs") as Python sees it: mqx.status()
lists each device with its budget, use and queries; mqx.Client asks for a device or is placed by
weighted demand and learns where it runs; python -m mqx status and top show every device; a device
the node lacks is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import mqx
from conftest import MIB, requires_daemon

pytestmark = requires_daemon


def two_devices(start_node):
    return start_node(capacity="32MiB", MQX_SIM_DEVICES="2")


def test_each_device_has_its_budget_and_queries_are_placed(start_node, sim_client):
    node = two_devices(start_node)
    env = {**os.environ, **node.env}
    holder = subprocess.Popen(
        [sim_client, "hold-budget", str(8 * MIB), "0"],
        env={**env, "MQX_SIM_DEVICE": "sim-1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with mqx.Client("pinned", weighted="12MiB", peak="12MiB", instance=node.instance, device="sim-0") as pinned:
            pinned.request_admission(timeout=10)
            assert pinned.device == "sim-0"
            # 20 MiB leave nothing on sim-0 (12 MiB run there) and 12 MiB on sim-1.
            with mqx.Client("placed", weighted="20MiB", peak="20MiB", instance=node.instance) as placed:
                assert placed.device is None, "not placed before admission"
                placed.request_admission(timeout=10)
                assert placed.device == "sim-1"
                status = mqx.status(instance=node.instance)
                assert [(d.index, d.identity, d.capacity) for d in status.devices] == [
                    (0, "sim-0", 32 * MIB),
                    (1, "sim-1", 32 * MIB),
                ]
                assert status.capacity == 64 * MIB
                assert [d.used for d in status.devices] == [0, 8 * MIB]
                assert [d.running_queries for d in status.devices] == [1, 1]
                assert [d.memory_clients for d in status.devices] == [0, 1]
                assert [d.running_weighted_demand for d in status.devices] == [12 * MIB, 20 * MIB]
                assert {c.name: c.device for c in status.clients} == {
                    "sim_client": "sim-1",
                    "pinned": "sim-0",
                    "placed": "sim-1",
                }
                as_json = json.loads(
                    subprocess.run(
                        [sys.executable, "-m", "mqx", "status", "--json"], env=env, capture_output=True, text=True
                    ).stdout
                )
                assert [d["identity"] for d in as_json["devices"]] == ["sim-0", "sim-1"]
                assert {c["name"]: c["device"] for c in as_json["clients"]}["placed"] == "sim-1"
                shown = subprocess.run([sys.executable, "-m", "mqx", "status"], env=env, capture_output=True, text=True)
                assert shown.returncode == 0, shown.stderr
                assert "budget: 8.0 MiB used of 64.0 MiB" in shown.stdout
                assert "device 0 sim-0: 0.0 MiB used of 32.0 MiB (0%), 1 queries running" in shown.stdout
                assert "device 1 sim-1: 8.0 MiB used of 32.0 MiB (25%), 1 queries running" in shown.stdout
                view = subprocess.run(
                    [sys.executable, "-m", "mqx", "top", "--once", "--interval", "0.2"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                assert view.returncode == 0, view.stderr
                lines = view.stdout.splitlines()
                sim1 = next(line for line in lines if line.strip().startswith("sim-1 "))
                assert "8.0 MiB of 32.0 MiB (25%), 1 running, 1 memory" in sim1
                running = view.stdout.split("running queries (2):")[1].split("memory clients")[0]
                assert any("placed" in line and line.rstrip().endswith("sim-1") for line in running.splitlines())
    finally:
        holder.kill()
        holder.wait()


def test_a_device_the_node_lacks_is_refused(start_node):
    node = two_devices(start_node)
    with pytest.raises(mqx.MqxError, match="no device 'sim-5'.*0 sim-0 \\(32 MiB\\), 1 sim-1 \\(32 MiB\\)"):
        mqx.Client("lost", device="sim-5", instance=node.instance)
    with mqx.Client("by-index", instance=node.instance, device="1") as query:
        query.request_admission(timeout=10)
        assert query.device == "sim-1"
