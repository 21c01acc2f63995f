#!/usr/bin/env python3
"""check_trace.py MERGED.json QUERIES: the merged trace of the two-query sim run of trace_test.cpp
holds what the run did: mqxd's admission decisions (every query admitted, at least one postponed,
each with its weighted demand and the capacity), each client's launches, loads with bytes, own
evictions and evictions served for another process, on the tracks of the processes that did them.
Exit 0, or 1 with the first missing thing."""

import collections
import json
import sys


def main() -> int:
    events = json.load(open(sys.argv[1]))["traceEvents"]
    queries = int(sys.argv[2])
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    daemons = [pid for pid, name in names.items() if name == "mqxd"]
    clients = [pid for pid, name in names.items() if name.startswith("mqx client")]
    problems = []
    if len(daemons) != 1:
        problems.append(f"expected one mqxd trace, found {daemons}")
    if len(clients) < queries:
        problems.append(f"expected {queries} client traces, found {clients}")
    by = collections.Counter((e["pid"], e["name"]) for e in events if e.get("ph") != "M")
    daemon = daemons[0] if daemons else None
    admitted = [e for e in events if e.get("pid") == daemon and e["name"] == "admitted"]
    postponed = [e for e in events if e.get("pid") == daemon and e["name"] == "postponed"]
    if len(admitted) != queries:
        problems.append(f"expected {queries} 'admitted' decisions, found {len(admitted)}")
    if not postponed:
        problems.append("no 'postponed' decision")
    for decision in admitted + postponed:
        if decision["ph"] != "i" or decision["args"].get("capacity", 0) == 0 or "weighted_demand" not in decision["args"]:
            problems.append(f"decision without capacity or weighted demand: {decision}")
            break
    for pid in clients:
        for name in ("launch", "make resident"):
            if by[(pid, name)] == 0:
                problems.append(f"client {pid}: no '{name}'")
    loads = [e for e in events if e.get("cat") == "transfer" and e["name"].startswith("load")]
    if not loads or any(e["args"].get("bytes", 0) == 0 for e in loads):
        problems.append("no load, or a load without bytes")
    evictions = [e for e in events if e["name"] == "evict"]
    if not evictions or any(e["args"].get("bytes", 0) == 0 for e in evictions):
        problems.append("no eviction, or one without bytes")
    served = [e for e in events if e["name"] == "evict for another process"]
    if not any(e["args"].get("freed", 0) > 0 for e in served):
        problems.append("no eviction served for another process that freed something")
    if not any(e["name"] == "write-back" and e["args"].get("bytes", 0) > 0 for e in events):
        problems.append("no write-back with bytes")
    for problem in problems:
        print(f"check_trace: {problem}", file=sys.stderr)
    print(f"check_trace: {len(events)} events, {len(clients)} clients, {len(admitted)} admitted, "
          f"{len(postponed)} postponed, {len(evictions)} evictions, {len(served)} served for others")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
