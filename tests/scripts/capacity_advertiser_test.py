#!/usr/bin/env python3
"""Tests of deploy/advertiser/mqx_capacity_advertiser.py (docs/cluster.md, "Capacity").

Its labels are computed from a real mqxd's metrics: mqxd runs on the simulated device with a
128 MiB node and serves its metrics on a free loopback port, and queries under mqx-run (with
plans: known weighted demands) run and wait on it. The Kubernetes API is replaced by a
function that records the patches, and, for the HTTP client itself, by a fake API server on
the loopback that records the request.

    capacity_advertiser_test.py          (MQXTEST_BIN_DIR: the build's bin/, with mqxd, mqx-run)
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
ADVERTISER = ROOT / "deploy" / "advertiser" / "mqx_capacity_advertiser.py"
BIN_DIR = Path(os.environ.get("MQXTEST_BIN_DIR", ROOT / "build" / "bin"))
MIB = 1 << 20


def load_advertiser():
    spec = importlib.util.spec_from_file_location("mqx_capacity_advertiser", ADVERTISER)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


advertiser = load_advertiser()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {what}")


class Node:
    """A real mqxd on the simulated device with its metrics on a loopback port."""

    def __init__(self, capacity: str = "128MiB") -> None:
        self.directory = tempfile.TemporaryDirectory(prefix="mqx-advertiser-")
        self.processes: list[subprocess.Popen] = []
        for attempt in range(5):  # another process may take the free port first
            self.port = free_port()
            self.env = {
                **os.environ,
                "MQX_DAEMON_INSTANCE": f"advertiser{os.getpid()}-{attempt}",
                "MQX_BACKEND_KIND": "sim",
                "MQX_SIM_CAPACITY": capacity,
                "MQX_DAEMON_CAPACITY": capacity,
                "MQX_DAEMON_METRICS_PORT": str(self.port),
                "MQX_DAEMON_DEMAND_STATE_FILE": os.path.join(self.directory.name, "demand"),
                "MQX_LOG_LEVEL": "error",
            }
            self.daemon = subprocess.Popen([str(BIN_DIR / "mqxd")], env=self.env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
            ready, _, _ = select.select([self.daemon.stdout], [], [], 10)
            if ready and self.daemon.stdout.readline().startswith("mqxd: ready"):
                return
            self.daemon.kill()
            error = self.daemon.communicate()[1]
        raise AssertionError(f"mqxd did not start: {error}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def run_query(self, name: str, demand_mib: int, seconds: int) -> subprocess.Popen:
        """`sleep SECONDS` under mqx-run with a plan of one operator of DEMAND_MIB."""
        plan = Path(self.directory.name) / f"{name}.toml"
        plan.write_text(f'name = "{name}"\n[[operator]]\ntime = 1.0\nmemory = "{demand_mib}MiB"\n')
        query = subprocess.Popen([str(BIN_DIR / "mqx-run"), "--plan", str(plan), "--", "sleep", str(seconds)],
                                 env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(query)
        return query

    def room(self):
        return advertiser.NodeRoom.from_metrics(advertiser.scrape(self.url, 2.0))

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
        self.daemon.communicate(timeout=10)
        self.directory.cleanup()


class ParseMetricsTest(unittest.TestCase):
    def test_labels_escapes_timestamps_and_comments(self) -> None:
        text = ('# HELP mqx_x A help line.\n# TYPE mqx_x gauge\nmqx_x 7\n'
                'mqx_y{name="a \\"quoted\\" \\\\ name, {x}",state="running"} 1.5e3 1700000000000\n'
                'mqx_z{state="waiting",} 2\nmqx_empty{} 3\n')
        samples = advertiser.parse_metrics(text)
        self.assertEqual(samples[("mqx_x", frozenset())], 7)
        self.assertEqual(samples[("mqx_y", frozenset({("name", 'a "quoted" \\ name, {x}'), ("state", "running")}))],
                         1500)
        self.assertEqual(samples[("mqx_z", frozenset({("state", "waiting")}))], 2)
        self.assertEqual(samples[("mqx_empty", frozenset())], 3)

    def test_broken_text_is_refused(self) -> None:
        for broken in ["mqx_x", "mqx_x{state=running} 1", 'mqx_x{state="a"', "mqx_x seven", "9x 1", 'x{a="1" b="2"} 1']:
            with self.subTest(broken=broken), self.assertRaises(advertiser.MetricsError):
                advertiser.parse_metrics(broken + "\n")

    def test_a_missing_series_is_named(self) -> None:
        with self.assertRaisesRegex(advertiser.MetricsError, r'mqx_weighted_demand_bytes\{state="waiting"\}'):
            advertiser.NodeRoom.from_metrics('mqx_node_capacity_bytes 1\nmqx_node_used_bytes 0\n'
                                             'mqx_weighted_demand_bytes{state="running"} 0\n'
                                             'mqx_admission_queue_length 0\n')


class LabelsTest(unittest.TestCase):
    def room(self, capacity=1024, used=0, running=0, waiting=0, queue=0):
        return advertiser.NodeRoom(capacity * MIB, used * MIB, running * MIB, waiting * MIB, queue)

    def test_free_is_capacity_less_what_running_and_waiting_queries_claim(self) -> None:
        self.assertEqual(self.room(running=300, waiting=200).free_bytes(), 524 * MIB)
        # Held bytes count when the running queries hold more than they declared.
        self.assertEqual(self.room(used=600, running=300).free_bytes(), 424 * MIB)
        self.assertEqual(self.room(running=900, waiting=900).free_bytes(), 0)

    def test_labels_round_free_down_and_mark_an_absent_daemon(self) -> None:
        labels = advertiser.node_labels(self.room(running=300, queue=2), "mqx", 256)
        self.assertEqual(labels, {"mqx/ready": "true", "mqx/capacity-mib": "1024", "mqx/free-mib": "512",
                                  "mqx/queue-length": "2"})
        self.assertEqual(advertiser.node_labels(None, "example.org/mqx", 256),
                         {"example.org/mqx/ready": "false", "example.org/mqx/capacity-mib": "0",
                          "example.org/mqx/free-mib": "0", "example.org/mqx/queue-length": "0"})
        self.assertEqual(set(advertiser.node_labels(None, "mqx", 1)), set(advertiser.label_keys("mqx").values()))


class RecordingApi:
    def __init__(self) -> None:
        self.patches: list[tuple[str, dict]] = []
        self.fail = False

    def patch(self, node: str, labels) -> None:
        if self.fail:
            raise RuntimeError("HTTP 503")
        self.patches.append((node, dict(labels)))


@unittest.skipUnless((BIN_DIR / "mqxd").is_file() and (BIN_DIR / "mqx-run").is_file(),
                     f"mqxd and mqx-run are not built in {BIN_DIR}")
class RealDaemonTest(unittest.TestCase):
    def setUp(self) -> None:
        self.node = Node()
        self.addCleanup(self.node.stop)

    def test_labels_follow_the_node(self) -> None:
        api = RecordingApi()
        subject = advertiser.Advertiser("gpu-node-1", lambda: advertiser.scrape(self.node.url, 2.0), api.patch,
                                        granularity_mib=16)
        self.assertTrue(subject.update())
        self.assertEqual(api.patches[-1], ("gpu-node-1", {"mqx/ready": "true", "mqx/capacity-mib": "128",
                                                          "mqx/free-mib": "128", "mqx/queue-length": "0"}))
        self.assertFalse(subject.update(), "nothing changed, yet the node was patched again")
        self.assertEqual(len(api.patches), 1)

        # A running query of 40 MiB: 88 MiB free, rounded down to 80.
        self.node.run_query("running", 40, 60)
        wait_for(lambda: self.node.room().running_weighted_demand == 40 * MIB, 10, "the query runs")
        self.assertTrue(subject.update())
        self.assertEqual(api.patches[-1][1]["mqx/free-mib"], "80")

        # A query of 100 MiB does not fit beside it: it waits, and nothing is free.
        self.node.run_query("waiting", 100, 1)
        wait_for(lambda: self.node.room().queue_length == 1, 10, "the second query waits")
        room = self.node.room()
        self.assertEqual((room.capacity, room.running_weighted_demand, room.waiting_weighted_demand),
                         (128 * MIB, 40 * MIB, 100 * MIB))
        self.assertTrue(subject.update())
        self.assertEqual(api.patches[-1][1], {"mqx/ready": "true", "mqx/capacity-mib": "128", "mqx/free-mib": "0",
                                              "mqx/queue-length": "1"})

        # A failed patch is tried again on the next update.
        self.node.processes[0].send_signal(signal.SIGTERM)  # the running query ends; the waiting one starts
        wait_for(lambda: self.node.room().queue_length == 0, 10, "the waiting query is admitted")
        api.fail = True
        with self.assertRaises(RuntimeError):
            subject.update()
        api.fail = False
        self.assertTrue(subject.update())
        self.assertEqual(api.patches[-1][1]["mqx/queue-length"], "0")

        # mqxd gone: the node is advertised as not ready, then the labels are withdrawn.
        self.node.daemon.send_signal(signal.SIGTERM)
        self.node.daemon.wait(timeout=10)
        self.assertTrue(subject.update())
        self.assertEqual(api.patches[-1][1], {"mqx/ready": "false", "mqx/capacity-mib": "0", "mqx/free-mib": "0",
                                              "mqx/queue-length": "0"})
        subject.withdraw()
        self.assertEqual(api.patches[-1][1], dict.fromkeys(advertiser.label_keys("mqx").values()))

    def test_check_is_the_probe(self) -> None:
        self.assertEqual(advertiser.main(["--check", "--metrics-url", self.node.url]), 0)
        self.assertEqual(advertiser.main(["--check", "--metrics-url", f"http://127.0.0.1:{free_port()}/metrics"]), 1)
        self.assertEqual(advertiser.main(["--check", "--metrics-url", self.node.url.replace("/metrics", "/x")]), 1)

    def test_the_script_runs_as_a_program(self) -> None:
        result = subprocess.run([sys.executable, str(ADVERTISER), "--dry-run", "--metrics-url", self.node.url],
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout)["mqx/capacity-mib"], "128")


class FakeApiServer:
    """A loopback HTTP server that records one request and answers with `status`."""

    def __init__(self, status: int) -> None:
        self.requests: list[dict] = []
        recorded = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PATCH(self) -> None:  # noqa: N802 (the http.server name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                recorded.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                answer = json.dumps({"kind": "Node" if status == 200 else "Status"}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class KubernetesApiTest(unittest.TestCase):
    def test_a_merge_patch_of_the_node_labels_with_the_token(self) -> None:
        server = FakeApiServer(200)
        self.addCleanup(server.close)
        advertiser.KubernetesApi(server.url, token="secret-token").patch_node_labels(
            "gpu-node-1", {"mqx/free-mib": "512", "mqx/ready": None})
        (request,) = server.requests
        self.assertEqual(request["path"], "/api/v1/nodes/gpu-node-1")
        self.assertEqual(request["headers"]["Content-Type"], "application/merge-patch+json")
        self.assertEqual(request["headers"]["Authorization"], "Bearer secret-token")
        # null removes a label in a merge patch (RFC 7386).
        self.assertEqual(request["body"], {"metadata": {"labels": {"mqx/free-mib": "512", "mqx/ready": None}}})

    def test_a_refusal_names_the_status(self) -> None:
        server = FakeApiServer(403)
        self.addCleanup(server.close)
        with self.assertRaisesRegex(RuntimeError, "PATCH node n1: HTTP 403"):
            advertiser.KubernetesApi(server.url).patch_node_labels("n1", {"mqx/ready": "true"})

    def test_outside_a_pod_it_says_so(self) -> None:
        saved = os.environ.pop("KUBERNETES_SERVICE_HOST", None)
        self.addCleanup(lambda: saved is not None and os.environ.__setitem__("KUBERNETES_SERVICE_HOST", saved))
        with self.assertRaisesRegex(RuntimeError, "not running in a pod"):
            advertiser.KubernetesApi.in_cluster()


if __name__ == "__main__":
    unittest.main(verbosity=2)
