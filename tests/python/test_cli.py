"""The command lines of python -m mqx: a bad argument is one line naming it and exit status 2,
never a traceback (--watch -1 used to reach time.sleep and raise ValueError)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import requires_daemon


def run_mqx(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqx", *arguments],
        env=env if env is not None else {**os.environ, "MQX_DAEMON_INSTANCE": f"absent{os.getpid()}"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_refused(result: subprocess.CompletedProcess[str], named: str) -> None:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert named in lines[0], result.stderr


@pytest.mark.parametrize("value", ["-1", "0", "inf", "nan", "1e300", "abc"])
def test_bad_intervals_are_one_line(value):
    assert_refused(run_mqx("status", "--watch", value), f"'{value}'")
    assert_refused(run_mqx("top", "--once", "--interval", value), f"'{value}'")


def test_unknown_arguments_are_one_line():
    assert_refused(run_mqx("status", "--no-such-flag"), "--no-such-flag")
    assert_refused(run_mqx("top", "--no-such-flag"), "--no-such-flag")
    assert_refused(run_mqx("no-such-command"), "no-such-command")


def test_help_exits_0():
    for command in (["--help"], ["status", "--help"], ["top", "--help"]):
        result = run_mqx(*command)
        assert result.returncode == 0, result
        assert result.stdout.startswith("usage: "), result.stdout


def test_version_is_the_binaries_version():
    """python -m mqx --version, mqxd --version and mqx-run --version: one version and commit."""
    import mqx
    from mqx.binaries import find_binary

    result = run_mqx("--version")
    assert result.returncode == 0, result
    assert result.stdout == f"python -m mqx {mqx.__version__} (commit {mqx.COMMIT})\n", result.stdout
    for binary in ("mqxd", "mqx-run"):
        line = subprocess.run([str(find_binary(binary)), "--version"], capture_output=True, text=True, timeout=30)
        assert line.returncode == 0, line
        assert line.stdout.split(" ", 1)[1] == result.stdout.split(" ", 3)[3], (line.stdout, result.stdout)


@requires_daemon
def test_watch_minus_one_against_a_live_node(node):
    result = run_mqx("status", "--watch", "-1", env={**os.environ, **node.env})
    assert_refused(result, "--watch")
