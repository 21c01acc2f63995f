"""python -m mqx top [--instance NAME] [--interval SECONDS] [--once]: a live view of a node.

Reads the same node status as ``python -m mqx status`` (mqx.status(): mqxd's segment) twice per
refresh and shows: the device budget, each device's budget, use and running queries (docs/daemon.md,
"Several GPUs"), the admission queue (waiting queries in admission order with
their weighted and peak demands, paper §5), the running queries and the sum of their weighted
demands, the device each query runs on or asked for, the memory clients (and their device) with the device bytes they hold and how fast that changes, their
transfer rates (host to device, device to host), eviction rates and swap-buffer use (the activity
each client publishes in its record), and the node's totals: transfer and eviction rates, swap
used and reserved, cross-process evictions served, bytes evicted for others, bytes reclaimed from
dead clients. Rates are differences between the two samples. q quits. --once prints one view (two samples
--interval apart) and exits: for scripts and tests.

Exit status: 0, or 69 when no mqxd serves the user and instance (as ``status``).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional, Sequence

from .cli import OneLineParser, exit_quietly_on_broken_pipe, printable, seconds

NO_DAEMON_EXIT = 69


def _mib(count: float) -> str:
    return f"{count / (1 << 20):.1f} MiB"


def _bar(used: int, capacity: int, width: int = 40) -> str:
    filled = min(width, round(width * used / capacity)) if capacity else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def render(before: Any, after: Any, seconds: float) -> str:
    """The view of two NodeStatus samples taken ``seconds`` apart."""
    from .holders import holders, process_stopped
    seconds = max(seconds, 1e-9)

    def rate(name: str) -> float:
        return (getattr(after, name) - getattr(before, name)) / seconds

    def activity_rate(name: str) -> float:
        return (getattr(after.activity, name) - getattr(before.activity, name)) / seconds

    held_before = {(c.slot, c.pid): c.budget_held for c in before.clients}
    # A client that joined between the samples started from zero (its record's counters are
    # cleared when it joins).
    activity_before = {(c.slot, c.pid): c.activity for c in before.clients}

    def client_rate(client: Any, name: str) -> float:
        earlier = activity_before.get((client.slot, client.pid))
        return (getattr(client.activity, name) - (getattr(earlier, name) if earlier else 0)) / seconds

    waiting = sorted((c for c in after.clients if c.state == "waiting"), key=lambda c: c.arrival)
    running = [c for c in after.clients if c.state == "running"]
    memory = [c for c in after.clients if c.state == "memory"]
    share = 100.0 * after.used / after.capacity if after.capacity else 0.0
    lines = [
        f"mqx top: mqxd pid {after.daemon_pid}, node {after.segment}"
        + (f" (instance {after.instance})" if after.instance else "")
        + f", every {seconds:.1f} s",
        f"device budget {_bar(after.used, after.capacity)} {_mib(after.used)} of {_mib(after.capacity)} ({share:.0f}%)",
        *(
            f"  {d.identity:<12} {_bar(d.used, d.capacity, 28)} {_mib(d.used)} of {_mib(d.capacity)} "
            f"({100.0 * d.used / d.capacity if d.capacity else 0.0:.0f}%), {d.running_queries} running, "
            f"{d.memory_clients} memory"
            for d in after.devices
        ),
        f"clients: {len(waiting)} waiting, {len(running)} running, {len(memory)} memory",
        f"weighted demand: running {_mib(sum(c.weighted_demand for c in running))}, "
        f"waiting {_mib(sum(c.weighted_demand for c in waiting))}",
        f"transfers: host to device {_mib(activity_rate('bytes_to_device'))}/s, "
        f"device to host {_mib(activity_rate('bytes_to_host'))}/s; evictions {activity_rate('evictions'):.1f}/s, "
        f"written back {_mib(activity_rate('bytes_written_back'))}/s; launches {activity_rate('launches'):.1f}/s",
        f"swap buffers: {_mib(after.activity.swap_used_bytes)} used, "
        f"{_mib(after.activity.swap_reserved_bytes)} reserved",
        f"evictions for others: {rate('eviction_requests_served'):.1f}/s, "
        f"{_mib(rate('bytes_evicted_for_others'))}/s (total {after.eviction_requests_served}, "
        f"{_mib(after.bytes_evicted_for_others)}); reclaimed {_mib(rate('reclaimed_bytes'))}/s "
        f"(dead clients {after.dead_clients})",
        "memory held by: " + ("; ".join(holders(after)) or "nobody"),
        "",
        f"admission queue ({len(waiting)}):",
    ]
    header = f"  {'slot':>4} {'pid':>8} {'name':<20} {'weighted':>12} {'peak':>12}"
    lines.append(header + " device")
    for c in waiting:
        lines.append(
            f"  {c.slot:>4} {c.pid:>8} {printable(c.name)[:20]:<20} {_mib(c.weighted_demand):>12} {_mib(c.peak_demand):>12} "
            f"{c.device or 'any'}"
        )
    lines += ["", f"running queries ({len(running)}):", header + f" {'observed':>12} device"]
    for c in running:
        lines.append(
            f"  {c.slot:>4} {c.pid:>8} {printable(c.name)[:20]:<20} {_mib(c.weighted_demand):>12} {_mib(c.peak_demand):>12} "
            f"{_mib(c.observed_peak):>12} {c.device or '-'}" + ("  STOPPED" if process_stopped(c.pid) else "")
        )
    lines += [
        "",
        f"memory clients ({len(memory)}):",
        f"  {'slot':>4} {'pid':>8} {'name':<20} {'held':>12} {'change':>14} {'to device':>14} {'to host':>14} "
        f"{'evictions':>11} {'swap used':>12} {'query':>5} device",
    ]
    for c in memory:
        change = (c.budget_held - held_before.get((c.slot, c.pid), 0)) / seconds
        lines.append(
            f"  {c.slot:>4} {c.pid:>8} {printable(c.name)[:20]:<20} {_mib(c.budget_held):>12} {_mib(change) + '/s':>14} "
            f"{_mib(client_rate(c, 'bytes_to_device')) + '/s':>14} {_mib(client_rate(c, 'bytes_to_host')) + '/s':>14} "
            f"{client_rate(c, 'evictions'):>9.1f}/s {_mib(c.activity.swap_used_bytes):>12} "
            f"{'-' if c.query_slot is None else c.query_slot:>5} {c.device or '-'}"
            + ("  STOPPED" if process_stopped(c.pid) else "")
        )
    return "\n".join(lines)


def _sample(instance: Optional[str]) -> Any:
    from . import status

    return status(instance=instance)


def _live(instance: Optional[str], interval: float) -> int:
    import curses

    def loop(screen: Any) -> int:
        curses.curs_set(0)
        screen.timeout(int(interval * 1000))
        before, taken = _sample(instance), time.monotonic()
        while True:
            key = screen.getch()  # waits up to the interval: the refresh
            if key in (ord("q"), ord("Q")):
                return 0
            after, now = _sample(instance), time.monotonic()
            screen.erase()
            rows, columns = screen.getmaxyx()
            for row, line in enumerate((render(before, after, now - taken) + "\n(q quits)").splitlines()[: rows - 1]):
                screen.addnstr(row, 0, line, columns - 1)
            screen.refresh()
            before, taken = after, now

    return curses.wrapper(loop)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m mqx top", description="a live view of mqxd's node")
    parser.add_argument("--instance", help="daemon.instance (default: MQX_DAEMON_INSTANCE or the config's)")
    parser.add_argument("--interval", type=seconds, default=1.0, metavar="SECONDS", help="refresh interval (1.0)")
    parser.add_argument("--once", action="store_true", help="print one view (two samples an interval apart) and exit")
    options = parser.parse_args(argv)
    from . import DaemonNotRunning, MqxError

    try:
        if options.once or not sys.stdout.isatty():
            before, taken = _sample(options.instance), time.monotonic()
            time.sleep(options.interval)
            after = _sample(options.instance)
            print(render(before, after, time.monotonic() - taken), flush=True)
            return 0
        return _live(options.instance, options.interval)
    except DaemonNotRunning as error:
        print(f"python -m mqx top: {error}", file=sys.stderr)
        return NO_DAEMON_EXIT
    except MqxError as error:
        print(f"python -m mqx top: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return exit_quietly_on_broken_pipe()
