"""Daemon: an mqxd process started (and stopped) from Python.

Each Daemon gets its own ``daemon.instance`` unless one is given, so that tests
and experiments never share a node's IPC objects with another run or with a
daemon already serving the machine. ``env`` holds the MQX_* variables that make
mqx-run, libmqx.so and ``mqx.Client`` join this daemon's node::

    with Daemon(admission="fix", fix_n=2, capacity="4GiB") as node:
        run_concurrent(queries, env=node.env)
"""

from __future__ import annotations

import itertools
import os
import select
import signal
import subprocess
import tempfile
import time
from typing import Mapping, Optional

from .binaries import PathLike, find_binary

_instances = itertools.count()


class DaemonStartError(RuntimeError):
    """mqxd exited or stayed silent instead of reporting ``mqxd: ready``."""


class Daemon:
    """A running mqxd; a context manager that stops it (SIGTERM) on exit.

    admission: "adaptive", "weight", "peak" or "fix" (paper §5, docs/daemon.md), None for mqxd's
    default (adaptive); fix_n: FIX-n's n;
    capacity: the node budget, bytes or a size string ("4GiB");
    instance: daemon.instance (default: a fresh private name);
    settings: further MQX_* variables (e.g. {"MQX_SIM_CAPACITY": "64MiB"}),
    given to mqxd and included in ``env``.
    """

    def __init__(
        self,
        admission: Optional[str] = None,
        fix_n: int = 2,
        capacity: Optional[str | int] = None,
        instance: Optional[str] = None,
        settings: Optional[Mapping[str, str]] = None,
        bin_dir: Optional[PathLike] = None,
        ready_timeout: float = 10.0,
    ) -> None:
        self.instance = instance or f"py{os.getpid()}-{next(_instances)}"
        self._state_dir = tempfile.TemporaryDirectory(prefix="mqx-demand-")
        self.env: dict[str, str] = {
            "MQX_DAEMON_INSTANCE": self.instance,
            "MQX_DAEMON_FIX_N": str(fix_n),
            "MQX_DAEMON_DEMAND_STATE_FILE": os.path.join(self._state_dir.name, "demand"),
        }
        if admission is not None:
            self.env["MQX_DAEMON_ADMISSION"] = admission
        if capacity is not None:
            self.env["MQX_DAEMON_CAPACITY"] = str(capacity)
        self.env.update(settings or {})
        self.log = ""  # what mqxd wrote to stderr, once stopped
        # stderr to a file, not a pipe: a chatty mqxd must never block on a full pipe.
        self._log_path = os.path.join(self._state_dir.name, "mqxd.log")
        with open(self._log_path, "w") as log:
            self._process = subprocess.Popen(
                [find_binary("mqxd", bin_dir)],
                env={**os.environ, **self.env},
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self._wait_until_ready(ready_timeout)

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self._process.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = self._process.stdout.readline()
            if line.startswith("mqxd: ready"):
                return
            if line == "":  # mqxd exited
                break
        self.kill()
        raise DaemonStartError(f"mqxd (instance {self.instance}) did not start: {self.log.strip() or 'no output'}")

    def stop(self, timeout: float = 5.0) -> int:
        """SIGTERM, then wait; returns mqxd's exit status (0 for a clean shutdown)."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
        try:
            self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
        self._read_log()
        self._state_dir.cleanup()
        return self._process.returncode

    def kill(self) -> None:
        """SIGKILL (a crash): the node's segment stays behind until the next mqxd of the instance."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.communicate()
        self._read_log()

    def _read_log(self) -> None:
        try:
            with open(self._log_path) as log:
                self.log = log.read()
        except OSError:
            pass

    def __enter__(self) -> "Daemon":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
