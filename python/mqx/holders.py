"""Who holds a node's memory, for ``python -m mqx status`` and ``top`` (docs/daemon.md, "Stopped holders")."""

from __future__ import annotations

from typing import Any

from .cli import printable


def mib(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB"


def process_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (SIGSTOP, SIGTSTP or a tracer: 'T' or 't' in /proc/<pid>/stat).

    A stopped client keeps its device memory and serves no eviction until SIGCONT (docs/daemon.md,
    "Stopped holders")."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return False
    fields = text[text.rfind(")") + 2 :].split()
    return bool(fields) and fields[0] in ("T", "t")


def shown_state(client: Any) -> str:
    """The client's state, or "stopped" when its process is stopped."""
    return "stopped" if process_stopped(client.pid) else client.state


def holders(node: Any) -> list[str]:
    """Who holds the node's memory, largest first: each running query (name, pid, demand, the bytes its
    processes hold, stopped or not) and each memory client outside any query that holds bytes."""
    held: dict[int, int] = {}
    # A stopped process of a query: the one to resume (not the query record's pid, mqx-run's).
    stopped: dict[int, int] = {}
    for c in node.clients:
        if c.state == "memory" and c.query_slot is not None:
            held[c.query_slot] = held.get(c.query_slot, 0) + c.budget_held
            if c.query_slot not in stopped and process_stopped(c.pid):
                stopped[c.query_slot] = c.pid
    rows = []
    for c in node.clients:
        if c.state == "running":
            demand = max(c.weighted_demand, held.get(c.slot, 0))
            if process_stopped(c.pid):
                mark = f", STOPPED: kill -CONT {c.pid} resumes it"
            elif c.slot in stopped:
                mark = f"; its process {stopped[c.slot]} is STOPPED: kill -CONT {stopped[c.slot]} resumes it"
            else:
                mark = ""
            rows.append((demand, f"'{printable(c.name)}' (pid {c.pid}{mark}) demand {mib(demand)}, holds {mib(held.get(c.slot, 0))}"))
        elif c.state == "memory" and c.query_slot is None and c.budget_held:
            mark = f", STOPPED: kill -CONT {c.pid} resumes it" if process_stopped(c.pid) else ""
            rows.append((c.budget_held, f"pid {c.pid} outside any query{mark} holds {mib(c.budget_held)}"))
    return [text for _, text in sorted(rows, key=lambda row: -row[0])]
