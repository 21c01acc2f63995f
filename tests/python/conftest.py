"""Fixtures of the Python suite: a real mqxd per test (a private daemon.instance and a tight
node budget), started through mqx.daemon.Daemon, and the paths of the build's programs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Iterator

import pytest

import mqx
from mqx.binaries import find_binary
from mqx.daemon import Daemon

MIB = 1 << 20

# The same small node as tests/daemon/node_fixture.hpp: processes on the simulated device.
NODE_SETTINGS = {
    "MQX_MEMORY_PAGE_SIZE": "1MiB",
    "MQX_SIM_GRANULARITY": "1MiB",
    "MQX_BACKEND_KIND": "sim",  # the node size below, also on a GPU host
    "MQX_SIM_CAPACITY": "64MiB",
    "MQX_MEMORY_SWAP_BUFFER_LIMIT": "256MiB",
    "MQX_MEMORY_PINNED_SWAP": "false",
    "MQX_LOG_LEVEL": "warn",
}


def _have(name: str) -> bool:
    try:
        find_binary(name)
        return True
    except FileNotFoundError:
        return False


requires_daemon = pytest.mark.skipif(not _have("mqxd"), reason="mqxd not built (daemon suite skipped)")
requires_kernelopt = pytest.mark.skipif(
    not getattr(mqx, "HAS_KERNELOPT", False), reason="kernelopt not built into the extension"
)


@pytest.fixture
def start_node() -> Iterator[Callable[..., Daemon]]:
    """Starts mqxd with the given admission policy and capacity; every node is stopped at the end
    of the test, and must stop cleanly (exit 0) unless the test killed it."""
    nodes: list[Daemon] = []

    def start(admission: str = "weight", fix_n: int = 2, capacity: str = "100MiB", **settings: str) -> Daemon:
        node = Daemon(admission=admission, fix_n=fix_n, capacity=capacity, settings={**NODE_SETTINGS, **settings})
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        was_alive = node.alive()
        status = node.stop()
        if was_alive:
            assert status == 0, f"mqxd did not stop cleanly: {node.log}"


@pytest.fixture
def node(start_node: Callable[..., Daemon]) -> Daemon:
    return start_node()


@pytest.fixture(scope="session")
def sim_client() -> str:
    """tests/daemon's mqx_sim_client: a memory client on the simulated device."""
    explicit = os.environ.get("MQXTEST_SIM_CLIENT")
    if explicit:
        return explicit
    for directory in (Path(d) for d in [os.environ.get("MQX_BIN_DIR", ""), getattr(mqx, "BUILD_BIN_DIR", "")] if d):
        candidate = directory.parent / "tests" / "daemon" / "mqx_sim_client"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("mqx_sim_client")
    if not found:
        pytest.skip("mqx_sim_client not built")
    return found
