#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare `tracevisor top --json` intervals with `tracevisor stat --json`
of the same recording: summed over the intervals, every (vm, vcpu, reason)
row has stat's count and total time, and the largest max is stat's max.

usage: top_check.py TOP_JSONL STAT_JSON [--by-reason]
--by-reason compares per reason only (a live view names a VM thread it
first saw unlabelled differently from stat, which reads the final maps).
Rows of top --xen (with a domid) are matched to stat's by domid.
Prints one line: "top-check: N intervals, M rows, E exits: ok", or the
first differences, exit 1."""
import json
import sys


def vm_of(row):
    """top --xen names a domain NAME[DOMID] (xen: Xen's idle vCPUs); stat dDOMID, idle."""
    if "domid" not in row or "mode" in row:
        return row["vm"]
    if row["domid"] is not None:
        return "d%d" % row["domid"]
    return "idle" if row["vm"] == "xen" else row["vm"]


def key(row, by_reason):
    return (row["reason"],) if by_reason else (vm_of(row), row["vcpu"], row["reason"])


def main():
    by_reason = "--by-reason" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    intervals = [json.loads(line) for line in open(args[0]) if line.strip()]
    stat = json.load(open(args[1]))
    top = {}
    for iv in intervals:
        for r in iv["rows"]:
            if r["count"] == 0 and r["total_ns"] is None:
                continue    # nothing to add: a runstate row with its share only (top --xen)
            k = key(r, by_reason)
            t = top.setdefault(k, {"count": 0, "total_ns": 0, "max_ns": 0})
            t["count"] += r["count"]
            t["total_ns"] += r["total_ns"] or 0
            t["max_ns"] = max(t["max_ns"], r["max_ns"] or 0)
    want = {}
    for r in stat:
        k = key(r, by_reason)
        w = want.setdefault(k, {"count": 0, "total_ns": 0, "max_ns": 0})
        w["count"] += r["count"]
        w["total_ns"] += r["total_ns"] or 0
        w["max_ns"] = max(w["max_ns"], r["max_ns"] or 0)
    bad = []
    for k in sorted(set(top) | set(want)):
        a, b = top.get(k), want.get(k)
        if a != b:
            bad.append("%s: top %s, stat %s" % ("/".join(k), a, b))
    exits = sum(w["count"] for w in want.values())
    if bad:
        print("top-check: %d rows differ:" % len(bad))
        for line in bad[:20]:
            print("  " + line)
        return 1
    print("top-check: %d intervals, %d rows, %d exits: ok" % (len(intervals), len(want), exits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
