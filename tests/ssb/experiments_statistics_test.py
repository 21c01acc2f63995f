"""The reading of mqx statistics (python/mqx/libmqx_log.py) that the SSB experiments driver
(bench/ssb/experiments/ssb_experiments.py) and the peer benchmark (bench/peers/run-peers) share.

GPU runs get them from libmqx's exit log, one line per managed device ("statistics of device N:
{...}" since the multi-device interposer); sim programs print "# mqx statistics {...}". At ab2363d
the driver knew only the older "statistics: {...}" line, and every GPU run reported 0 bytes moved.

  experiments_statistics_test.py EXPERIMENTS_DIR
"""

import json
import sys
from types import SimpleNamespace

sys.path.insert(0, sys.argv[1])
import ssb_experiments as ssb  # noqa: E402
from mqx import libmqx_log  # noqa: E402  (ssb_experiments put python/ on the path)

failures = []


def expect(name, got, want):
    if got != want:
        failures.append(f"{name}: got {got}, want {want}")


def line(prefix, counters):
    return f"{prefix}{json.dumps(counters)}"


a = {"bytes_to_device": 1000, "bytes_to_host": 200, "evictions": 3, "bytes_written_back": 50}
b = {"bytes_to_device": 7, "bytes_to_host": 5, "evictions": 1, "bytes_written_back": 0}

expect("nothing", ssb.parse_statistics("# check passed\n"), {})
expect("sim program line", ssb.parse_statistics(line("# mqx statistics ", a) + "\n# check passed\n"), a)
expect("older libmqx line", ssb.parse_statistics(line("mqx[12] info: statistics: ", a)), a)
gpu = "# check passed\n" + line("[mqx 4242] info: statistics of device 0: ", a) + "\n"
expect("one device", ssb.parse_statistics(gpu), a)
two = gpu + line("[mqx 4242] info: statistics of device 1: ", b) + "\n"
expect("two devices summed", ssb.parse_statistics(two), {k: a[k] + b[k] for k in a})
again = line("info: statistics of device 0: ", b) + "\n" + line("info: statistics of device 0: ", a)
expect("a device logged twice: its last line", ssb.parse_statistics(again), a)
both = line("# mqx statistics ", b) + "\n" + gpu
expect("libmqx's lines before the program's", ssb.parse_statistics(both), a)

cut = line("[mqx 4242] info: statistics of device 0: ", a)[:-10]
expect("a line cut short", ssb.parse_statistics(cut), {})
expect("one parser", ssb.parse_statistics is libmqx_log.parse_statistics, True)

# Through a run's result (stdout and stderr), as the experiments read it: bytes moved not 0.
result = SimpleNamespace(stdout="# check passed\n", stderr=two)
expect("bytes moved of a GPU run", ssb._moved([result]), a["bytes_to_device"] + a["bytes_to_host"] + b["bytes_to_device"] + b["bytes_to_host"])

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("experiments statistics: 10 cases passed")
