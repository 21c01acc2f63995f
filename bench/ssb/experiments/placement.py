"""Placement on a node of several devices (issue 16; docs/daemon.md, "Several GPUs"): the SSB queries
arriving as in the open system (§7.5: `count` queries drawn from the 13 with seeded Poisson arrivals,
Weight admission on each query's operator plan written from its solo run) on a node of 2 devices,
each with a budget of --budget (with --budget-fraction F: F times the queries' summed peaks, shared
out among the devices); once placed by weighted demand (daemon.placement = "demand") and once
round-robin, under the same arrivals, in one run. Throughput, makespan, turnaround and the queries
placed on each device for both; every query checked against the CPU reference.

On the simulated device the node has sim.devices = 2 (sim-0, sim-1); on a GPU host mqxd lists the
GPUs it sees (CUDA_VISIBLE_DEVICES names two) and each query runs on its GPU through
CUDA_VISIBLE_DEVICES=<UUID>, exported by mqx-run.
"""

from __future__ import annotations

import re
import statistics
import tempfile
from collections import Counter
from pathlib import Path
from typing import Sequence

import ssb_experiments as ssb

PLACEMENTS = ["demand", "round-robin"]
# mqx-run --stats ends with the device the query ran on.
_DEVICE = re.compile(r"mqx-run: query '.*': waited .* exit -?\d+, device (\S+)")
_DEVICES = re.compile(r"; (\d+) devices?: (.*?)(?:, placement |$)", re.M)


def _node_devices(log: str) -> list[str]:
    """The devices mqxd's start line names ("2 devices: sim-0 256 MiB, sim-1 256 MiB")."""
    match = _DEVICES.search(log)
    return [entry.rsplit(" ", 2)[0] for entry in match.group(2).split(", ")] if match else []


def placement(setup: ssb.Setup, queries: Sequence[str], count: int, rate: float, seed: int, devices: int = 2) -> dict:
    """Demand against round-robin placement on a node of `devices` devices."""
    if setup.budget_fraction is None:
        budget, derived = setup.budget, {"budget_per_device": setup.budget}
    else:  # the single node's contended budget, shared out among the devices
        _, derived = ssb.contended_budget(setup, queries)
        budget = ssb._mib(setup.budget_fraction * derived["sum_of_peaks_mb"] / devices)
        derived = {**derived, "budget_per_device": budget}
    alone = ssb.solo_mqx(setup, queries, setup.capacity)  # the plans: each query alone, ample budget
    settings = {"MQX_BACKEND_KIND": "sim", "MQX_SIM_DEVICES": str(devices)} if setup.device == "sim" else {}
    rows = []
    node_devices: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ssb-plans-") as directory:
        plans = {q: ssb._plan_file(Path(directory), alone[q]) for q in queries}
        commands = [setup.command(q, plan=plans[q]) for q in queries]
        for kind in PLACEMENTS:
            with setup.daemon(budget, admission="weight", settings={**settings, "MQX_DAEMON_PLACEMENT": kind}) as node:
                results = ssb.run_poisson(commands, rate, count, seed, env=node.env, mqx_run=setup.mqx_run, timeout=setup.timeout, ordered=False)
            node_devices = _node_devices(node.log)  # mqxd's log, read once it stopped
            if len(node_devices) != devices:
                raise ssb.ExperimentError(f"the node had {len(node_devices)} devices ({node_devices}), the experiment wants {devices}")
            ssb._check(results)
            placed = [m.group(1) if (m := _DEVICE.search(r.stderr)) else "?" for r in results]
            if "?" in placed:
                raise ssb.ExperimentError(f"{kind}: a query did not say where it ran (mqx-run --stats)")
            per_device = Counter(placed)
            rows.append(
                {
                    "placement": kind,
                    "throughput_qps": ssb.throughput(results),
                    "makespan_s": max(r.finished for r in results) - min(r.submitted for r in results),
                    "mean_turnaround_s": statistics.mean(r.seconds for r in results),
                    "mean_wait_s": statistics.mean(r.waited or 0.0 for r in results),
                    "queries_per_device": {d: per_device.get(d, 0) for d in node_devices},
                    "placed": [{"query": r.name, "device": d} for r, d in zip(results, placed)],
                    **ssb._cross(node),
                }
            )
    by = {row["placement"]: row for row in rows}
    return {
        "queries": list(queries),
        "count": count,
        "rate_per_s": rate,
        "seed": seed,
        "devices": node_devices,
        **derived,
        "admission": "weight",
        "placements": rows,
        "demand_over_round_robin_throughput": by["demand"]["throughput_qps"] / by["round-robin"]["throughput_qps"],
    }
