#!/usr/bin/env python3
"""mqx-capacity-advertiser: keeps a Kubernetes node's labels current with the room its mqxd has.

It runs as a sidecar of mqxd (deploy/kubernetes/mqxd-daemonset.yaml) and shares its network
namespace, so it reads mqxd's Prometheus metrics on 127.0.0.1:<daemon.metrics_port> (mqxd
listens on the loopback only: docs/hardening.md, "Metrics"). Every --interval seconds it sets

    <prefix>/ready          "true" while mqxd answers, "false" while it does not
    <prefix>/capacity-mib   the node's device budget (mqx_node_capacity_bytes)
    <prefix>/free-mib       the budget no running or waiting query claims, rounded down
    <prefix>/queue-length   queries waiting for admission (mqx_admission_queue_length)

on its node through the Kubernetes API (PATCH of the node's metadata.labels), only when a
value changed, and removes them when it is stopped (SIGTERM). A query's Job selects nodes on
them with node affinity (mqx/free-mib Gt N); mqxd then admits the query on the node (paper §5).
docs/cluster.md says why labels and not an extended resource.

--check scrapes once and exits 0 when mqxd's metrics parse (mqxd's liveness and readiness
probe: the kubelet's HTTP probes reach the pod's address, not its loopback). Standard library
only: the image needs python3 and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

MIB = 1 << 20

# name{labels} value [timestamp]: the text exposition format 0.0.4.
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|\})')
_VALUE = re.compile(r"\s+(\S+)(?:\s+-?\d+)?$")


class MetricsError(Exception):
    """mqxd's metrics could not be read, or lack a series the labels need."""


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse_metrics(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples of a Prometheus text exposition, keyed by (name, labels)."""
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name = _NAME.match(line)
        if not name:
            raise MetricsError(f"line {number} is no sample: {line!r}")
        labels: list[tuple[str, str]] = []
        position = name.end()
        if line.startswith("{", position):
            position += 1
            closed = line.startswith("}", position)
            position += closed
            while not closed:
                label = _LABEL.match(line, position)
                if not label:
                    raise MetricsError(f"line {number}: bad labels in {line!r}")
                labels.append((label.group(1), _unescape(label.group(2))))
                position, closed = label.end(), label.group(3) == "}"
                if not closed and line.startswith("}", position):  # a trailing comma
                    position, closed = position + 1, True
        value = _VALUE.match(line, position)
        if not value:
            raise MetricsError(f"line {number}: no value in {line!r}")
        try:
            samples[(name.group(), frozenset(labels))] = float(value.group(1))
        except ValueError:
            raise MetricsError(f"line {number}: bad value {value.group(1)!r}") from None
    return samples


@dataclass(frozen=True)
class NodeRoom:
    """What the labels are computed from: mqxd's view of its node, in bytes."""

    capacity: int
    used: int
    running_weighted_demand: int
    waiting_weighted_demand: int
    queue_length: int

    @classmethod
    def from_metrics(cls, text: str) -> "NodeRoom":
        samples = parse_metrics(text)

        def value(name: str, **labels: str) -> int:
            key = (name, frozenset(labels.items()))
            if key not in samples:
                shown = ",".join(f'{k}="{v}"' for k, v in labels.items())
                raise MetricsError(f"no sample {name}{{{shown}}} in mqxd's metrics")
            return int(samples[key])

        return cls(
            capacity=value("mqx_node_capacity_bytes"),
            used=value("mqx_node_used_bytes"),
            running_weighted_demand=value("mqx_weighted_demand_bytes", state="running"),
            waiting_weighted_demand=value("mqx_weighted_demand_bytes", state="waiting"),
            queue_length=value("mqx_admission_queue_length"),
        )

    def free_bytes(self) -> int:
        """The budget a new query may count on under weight admission (paper §5). mqxd counts a
        running query as the larger of its weighted demand and what its processes hold; the
        metrics give both only summed over the node, so this takes the larger sum. Queries
        already waiting are served first (mqxd never lets a later query overtake), so their
        demands are taken off too."""
        claimed = max(self.running_weighted_demand, self.used) + self.waiting_weighted_demand
        return max(0, self.capacity - claimed)


def label_keys(prefix: str) -> dict[str, str]:
    """The label names, by role, under `prefix` (a DNS subdomain such as "mqx")."""
    return {role: f"{prefix}/{role}" for role in ("ready", "capacity-mib", "free-mib", "queue-length")}


def node_labels(room: Optional[NodeRoom], prefix: str, granularity_mib: int) -> dict[str, str]:
    """The labels for mqxd's view `room`; None (mqxd does not answer) gives a node no query
    selects: not ready, nothing free. Free MiB are rounded down to `granularity_mib` so that
    the node object (watched by every scheduler and controller) changes only when the room
    changes by that much."""
    keys = label_keys(prefix)
    if room is None:
        return {keys["ready"]: "false", keys["capacity-mib"]: "0", keys["free-mib"]: "0", keys["queue-length"]: "0"}
    free_mib = room.free_bytes() // MIB
    return {
        keys["ready"]: "true",
        keys["capacity-mib"]: str(room.capacity // MIB),
        keys["free-mib"]: str(free_mib - free_mib % max(1, granularity_mib)),
        keys["queue-length"]: str(room.queue_length),
    }


def scrape(url: str, timeout_seconds: float) -> str:
    """mqxd's metrics text; MetricsError when mqxd does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_seconds) as response:
            return response.read().decode("utf-8")
    except (OSError, urllib.error.URLError) as error:
        raise MetricsError(f"cannot read {url}: {error}") from None


# Sets (a value) or removes (None) labels of a node.
PatchLabels = Callable[[str, Mapping[str, Optional[str]]], None]


class KubernetesApi:
    """The one call the advertiser makes: a JSON merge patch of a node's labels (RBAC: patch on
    nodes, deploy/kubernetes/rbac.yaml). In a pod it uses the service account's token and CA."""

    ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"

    def __init__(self, base_url: str, token: str = "", context: Optional[ssl.SSLContext] = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.context = context

    @classmethod
    def in_cluster(cls) -> "KubernetesApi":
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise RuntimeError("KUBERNETES_SERVICE_HOST is not set: not running in a pod (use --dry-run)")
        with open(os.path.join(cls.ACCOUNT, "token")) as token:
            context = ssl.create_default_context(cafile=os.path.join(cls.ACCOUNT, "ca.crt"))
            host = f"[{host}]" if ":" in host else host
            return cls(f"https://{host}:{port}", token.read().strip(), context)

    def patch_node_labels(self, node: str, labels: Mapping[str, Optional[str]]) -> None:
        body = json.dumps({"metadata": {"labels": dict(labels)}}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/nodes/{node}", data=body, method="PATCH",
            headers={"Content-Type": "application/merge-patch+json", "Accept": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
                response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:300]
            raise RuntimeError(f"PATCH node {node}: HTTP {error.code}: {detail}") from None


class Advertiser:
    """One node's labels: computed from mqxd's metrics, patched when they changed."""

    def __init__(self, node: str, read_metrics: Callable[[], str], patch: PatchLabels, prefix: str = "mqx",
                 granularity_mib: int = 256, log: Callable[[str], None] = lambda line: None) -> None:
        self.node, self.read_metrics, self.patch = node, read_metrics, patch
        self.prefix, self.granularity_mib, self.log = prefix, granularity_mib, log
        self.last: Optional[dict[str, str]] = None  # what the node has, as far as we know

    def labels_now(self) -> dict[str, str]:
        try:
            room: Optional[NodeRoom] = NodeRoom.from_metrics(self.read_metrics())
        except MetricsError as error:
            self.log(f"mqxd does not answer ({error}): node {self.node} advertised as not ready")
            room = None
        return node_labels(room, self.prefix, self.granularity_mib)

    def update(self) -> bool:
        """Patches the node when its labels changed; True when it did. A failed patch is
        retried on the next update (the last known labels are kept only once written)."""
        labels = self.labels_now()
        if labels == self.last:
            return False
        self.patch(self.node, labels)
        self.log(f"node {self.node}: " + " ".join(f"{k}={v}" for k, v in sorted(labels.items())))
        self.last = labels
        return True

    def withdraw(self) -> None:
        """Removes the labels (the advertiser stops: no one keeps them current any more)."""
        self.patch(self.node, {key: None for key in label_keys(self.prefix).values()})
        self.last = None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="mqx-capacity-advertiser", description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics-url", default="http://127.0.0.1:9464/metrics",
                        help="mqxd's metrics (daemon.metrics_port on the loopback)")
    parser.add_argument("--node", default=os.environ.get("NODE_NAME", ""), help="the node (default: $NODE_NAME)")
    parser.add_argument("--prefix", default="mqx", help="label prefix, a DNS subdomain (default: mqx)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between updates (default: 10)")
    parser.add_argument("--granularity-mib", type=int, default=256, help="free MiB rounded down to this (256)")
    parser.add_argument("--check", action="store_true", help="scrape once: exit 0 when mqxd's metrics parse")
    parser.add_argument("--dry-run", action="store_true", help="print the labels once instead of patching")
    options = parser.parse_args(argv)

    def log(line: str) -> None:
        print(f"mqx-capacity-advertiser: {line}", file=sys.stderr, flush=True)

    def read() -> str:
        return scrape(options.metrics_url, timeout_seconds=min(5.0, max(1.0, options.interval)))

    if options.check:
        try:
            room = NodeRoom.from_metrics(read())
        except MetricsError as error:
            log(str(error))
            return 1
        print(f"mqxd serves: capacity {room.capacity // MIB} MiB, free {room.free_bytes() // MIB} MiB, "
              f"{room.queue_length} waiting")
        return 0
    if options.dry_run:
        labels = Advertiser(options.node or "-", read, lambda node, labels: None, options.prefix,
                            options.granularity_mib, log).labels_now()
        print(json.dumps(labels, indent=2, sort_keys=True))
        return 0
    if not options.node:
        parser.error("no node: pass --node or set NODE_NAME (the downward API's spec.nodeName)")

    api = KubernetesApi.in_cluster()
    advertiser = Advertiser(options.node, read, api.patch_node_labels, options.prefix, options.granularity_mib, log)
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        try:
            advertiser.update()
        except (RuntimeError, OSError) as error:  # the API server away for a while: try again
            log(str(error))
        deadline = time.monotonic() + options.interval
        while not stopping and time.monotonic() < deadline:
            time.sleep(min(0.5, options.interval))
    try:
        advertiser.withdraw()
        log(f"node {options.node}: labels removed")
    except (RuntimeError, OSError) as error:
        log(f"could not remove the labels of node {options.node}: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
