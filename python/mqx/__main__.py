"""python -m mqx status [--instance NAME] [--json] [--watch SECONDS]: the live state of a running mqxd.

Exit status: 0, or 69 (EX_UNAVAILABLE, as mqx-run) when no mqxd serves the user and instance, or 2
after one line naming a bad argument (--watch takes seconds from 0.1 to 86400), or 141 when
stdout's reader went away (``--watch 1 | head -1``). Query names are printed with control
characters escaped.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Optional, Sequence

from . import DaemonNotRunning, MqxError, NodeStatus, status
from .cli import OneLineParser, exit_quietly_on_broken_pipe, printable, seconds
from .holders import holders, shown_state

NO_DAEMON_EXIT = 69


def mib(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB"


def device_lines(node: NodeStatus) -> list[str]:
    """One line per device of the node (docs/daemon.md, "Several GPUs"): its identity, budget, use and the
    queries placed on it."""
    lines = []
    for d in node.devices:
        share = 100.0 * d.used / d.capacity if d.capacity else 0.0
        lines.append(
            f"  device {d.index} {d.identity}: {mib(d.used)} used of {mib(d.capacity)} ({share:.0f}%), "
            f"{d.running_queries} queries running (weighted demand {mib(d.running_weighted_demand)}), "
            f"{d.memory_clients} memory clients"
            + (f", {d.waiting_queries} queries waiting for it" if d.waiting_queries else "")
        )
    return lines


def render(node: NodeStatus) -> str:
    share = 100.0 * node.used / node.capacity if node.capacity else 0.0
    total = node.activity
    lines = [
        f"mqxd pid {node.daemon_pid}, node {node.segment}"
        + (f" (instance {node.instance})" if node.instance else ""),
        f"budget: {mib(node.used)} used of {mib(node.capacity)} ({share:.0f}%)",
        *device_lines(node),
        f"dead clients: {node.dead_clients}, reclaimed {mib(node.reclaimed_bytes)}; "
        f"cross-process evictions: {node.eviction_requests_served} ({mib(node.bytes_evicted_for_others)})",
        f"transferred: {mib(total.bytes_to_device)} to device, {mib(total.bytes_to_host)} to host; "
        f"evictions: {total.evictions} ({mib(total.bytes_written_back)} written back); launches: {total.launches}",
        f"swap buffers: {mib(total.swap_used_bytes)} used, {mib(total.swap_reserved_bytes)} reserved",
        "memory held by: " + ("; ".join(holders(node)) or "nobody"),
        f"{len(node.clients)} client(s)",
    ]
    if node.clients:
        lines.append(
            f"{'slot':>4} {'state':<8} {'pid':>8} {'name':<20} {'arrival':>7} {'weighted':>12} {'peak':>12} "
            f"{'held':>12} {'query':>5} {'to device':>12} {'to host':>12} {'evictions':>9} {'swap used':>12} device"
        )
        for c in node.clients:
            a = c.activity
            lines.append(
                f"{c.slot:>4} {shown_state(c):<8} {c.pid:>8} {printable(c.name)[:20]:<20} {c.arrival:>7} {mib(c.weighted_demand):>12} "
                f"{mib(c.peak_demand):>12} {mib(c.budget_held):>12} "
                f"{'-' if c.query_slot is None else c.query_slot:>5} {mib(a.bytes_to_device):>12} "
                f"{mib(a.bytes_to_host):>12} {a.evictions:>9} {mib(a.swap_used_bytes):>12} {c.device or '-'}"
            )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["top"]:  # the live view: mqx.top
        from .top import main as top

        return top(arguments[1:])
    if arguments[:1] == ["--version"]:  # the same line as mqxd --version
        from ._mqx import COMMIT, VERSION

        print(f"python -m mqx {VERSION} (commit {COMMIT})")
        return 0
    parser = OneLineParser(prog="python -m mqx", description="mqx from the command line")
    # Subcommands' parsers are of the parser's class: their errors are one line too.
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("status", help="the live state of a running mqxd")
    commands.add_parser("top", help="a live view of the node (python -m mqx top --help)")
    show.add_argument("--instance", help="daemon.instance (default: MQX_DAEMON_INSTANCE or the config's)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--watch", type=seconds, metavar="SECONDS", help="print again every SECONDS until Ctrl-C")
    options = parser.parse_args(arguments)
    try:
        while True:
            node = status(instance=options.instance)
            print(json.dumps(node.as_dict(), indent=2) if options.json else render(node), flush=True)
            if options.watch is None:
                return 0
            time.sleep(options.watch)
            print()
    except DaemonNotRunning as error:
        print(f"python -m mqx: {error}", file=sys.stderr)
        return NO_DAEMON_EXIT
    except MqxError as error:
        print(f"python -m mqx: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return exit_quietly_on_broken_pipe()


if __name__ == "__main__":
    sys.exit(main())
