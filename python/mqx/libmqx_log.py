"""Reading what libmqx.so and mqx's programs write about a process: its statistics.

libmqx logs its statistics at exit (log level info), one line per device it managed,
``mqx[pid] info: statistics of device N: {...}`` (an older libmqx wrote ``statistics: {...}``);
the simulated device's SSB programs print ``# mqx statistics {...}``. The peer benchmark
(bench/peers/run-peers) and the SSB experiments driver (bench/ssb/experiments) both read them
here, so that a change of the line changes one parser.
"""

from __future__ import annotations

import json
import re

_DEVICE_STATISTICS = re.compile(r"statistics of device (\d+):? (\{.*\})")
_STATISTICS = re.compile(r"statistics:? (\{.*\})")


def parse_statistics(output: str) -> dict:
    """A process's mqx statistics from its output: libmqx's per-device lines (the last of each
    device, counters summed over the devices), else the last plain statistics line; {} if none
    or if the line is not JSON (a line cut short)."""
    try:
        per_device = {int(ordinal): json.loads(text) for ordinal, text in _DEVICE_STATISTICS.findall(output)}
        if not per_device:
            found = _STATISTICS.findall(output)
            return json.loads(found[-1]) if found else {}
    except json.JSONDecodeError:
        return {}
    total: dict = {}
    for counters in per_device.values():
        for key, value in counters.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
            else:
                total.setdefault(key, value)
    return total
