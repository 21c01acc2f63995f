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


# Below 0.1 s: --watch 0.000001 printed 112,590 lines in 3 s.
@pytest.mark.parametrize("value", ["-1", "0", "0.000001", "0.09", "inf", "nan", "1e300", "abc"])
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


@requires_daemon
def test_watch_into_a_pipe_closed_by_its_reader_ends_quietly(node):
    """status --watch 1 | head -1 ended in a BrokenPipeError traceback."""
    watch = subprocess.Popen(
        [sys.executable, "-m", "mqx", "status", "--watch", "0.1"],
        env={**os.environ, **node.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watch.stdout is not None and watch.stderr is not None
    assert watch.stdout.readline().startswith("mqxd pid ")
    watch.stdout.close()  # as head -1 does
    assert watch.wait(timeout=30) == 141
    errors = watch.stderr.read()
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors


@requires_daemon
def test_query_names_with_control_characters_are_printed_escaped(node):
    """A name is whatever the query's starter chose: raw newlines and escapes forged status lines."""
    import mqx

    with mqx.Client("evil\n\x1b[31mforged", weighted="1MiB", peak="1MiB", instance=node.instance):
        result = run_mqx("status", env={**os.environ, **node.env})
    assert result.returncode == 0, result
    assert "\x1b" not in result.stdout, result.stdout
    assert "evil\\n\\x1b[31mf" in result.stdout, result.stdout
    assert not any(line.startswith("forged") or "[31mforged" in line and "\\x1b" not in line
                   for line in result.stdout.splitlines()), result.stdout
