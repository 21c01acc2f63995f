"""bench/ssb/experiments' open system over several rounds (issue 30): a policy's row is the run of
median throughput with the medians of the timing fields over every run, each run kept; and a
policy may run as a variant with mqxd settings of its own, so that one call compares them."""

from __future__ import annotations

import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(root / "bench" / "ssb" / "experiments"))
import ssb_experiments as ssb  # noqa: E402


def run(qps: float, turnaround: float, evictions: int, position: int) -> dict:
    return {"policy": "FIX-2", "throughput_qps": qps, "makespan_s": 20.0 / qps, "mean_turnaround_s": turnaround,
            "mean_wait_s": turnaround - 3.0, "evictions": evictions, "position": position, "runs": [{"query": "q1.1"}]}


def main() -> int:
    failures = []
    # Three rounds: the median throughput is the third run's; the median turnaround (9.0) is the
    # first run's, so the row's turnaround is a median of its own, not the median run's.
    runs = [run(0.50, 9.0, 10, 2), run(0.60, 8.0, 0, 7), run(0.55, 12.0, 4, 11)]
    row = ssb.open_rounds_row(runs)
    if row["throughput_qps"] != 0.55 or row["evictions"] != 4 or row["position"] != 11:
        failures.append(f"median run: {row['throughput_qps']}, {row['evictions']} evictions at {row['position']}, want 0.55, 4 at 11")
    if row["mean_turnaround_s"] != 9.0:
        failures.append(f"median turnaround {row['mean_turnaround_s']}, want 9.0")
    if row["throughput_qps_runs"] != [0.50, 0.60, 0.55] or row["evictions_runs"] != [10, 0, 4]:
        failures.append(f"per-run fields {row['throughput_qps_runs']}, {row['evictions_runs']} not in the order run")
    if row["positions"] != [2, 7, 11] or row["median_of"] != 3 or row["rounds"] != runs:
        failures.append("the rounds themselves are not kept whole")
    # Two rounds: the row is the slower run's, the throughput the mean of both (statistics.median).
    two = ssb.open_rounds_row(runs[:2])
    if two["evictions"] != 10 or abs(two["throughput_qps"] - 0.55) > 1e-12:
        failures.append(f"two rounds: {two['evictions']} evictions, {two['throughput_qps']} q/s, want 10 and 0.55")
    # One round is the row as it always was; none (a policy not run yet in a partial result) is empty.
    if ssb.open_rounds_row(runs[:1]) != runs[0]:
        failures.append("one round changed the row")
    if ssb.open_rounds_row([]) != {}:
        failures.append("no round gave a row")
    # Variants: the base policy's row under the whole label, its settings parsed; bad ones refused.
    chosen = ssb.admissions("FIX-2,Default,Default[MQX_DAEMON_ADAPTIVE_INITIAL_LIMIT=3; MQX_DAEMON_ADAPTIVE_GAIN=0.2]")
    if [row[0] for row in chosen] != ["FIX-2", "Default", "Default[MQX_DAEMON_ADAPTIVE_INITIAL_LIMIT=3; MQX_DAEMON_ADAPTIVE_GAIN=0.2]"] \
            or chosen[2][1:] != chosen[1][1:]:
        failures.append(f"variant rows {chosen}")
    if ssb.variant_settings(chosen[2][0]) != {"MQX_DAEMON_ADAPTIVE_INITIAL_LIMIT": "3", "MQX_DAEMON_ADAPTIVE_GAIN": "0.2"}:
        failures.append(f"variant settings {ssb.variant_settings(chosen[2][0])}")
    if ssb.variant_settings("FIX-2") != {}:
        failures.append("a plain label has settings")
    for bad in ("Default[initial=3]", "Default[]", "Nope[MQX_A=1]", "Default[MQX_A=1]x", "Default[MQX_A=]", "FIX-2,fix-2"):
        try:
            ssb.admissions(bad)
            failures.append(f"'{bad}' accepted")
        except ValueError:
            pass
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
