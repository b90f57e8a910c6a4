#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/e2e/serve-prometheus.sh's checks: Prometheus's answers (OUT/*.json,
queried in the lab's L1) against stat of the recording of the same run.

usage: serve_promql_check.py OUT N M K
"""
import json
import sys

# serve's le bounds (host/serve.h SERVE_BOUND_NS): 4^k x 256 ns
BOUNDS = [256e-9 * 4 ** i for i in range(13)]


def result(out, name):
    d = json.load(open("%s/%s.json" % (out, name)))
    assert d["status"] == "success", d
    return d["data"]["result"]


def by_reason(out, name):
    return {r["metric"]["reason"]: float(r["value"][1]) for r in result(out, name)}


def extrapolated_increase(points, start, end):
    """Prometheus 2.42's increase() of one counter's samples (promql/
    functions.go extrapolatedRate), over the window [start, end]."""
    if len(points) < 2:
        return None
    (t0, v0), (tn, vn) = points[0], points[-1]
    inc, last = vn - v0, 0.0
    for _, v in points:
        if v < last:
            inc += last		# a reset
        last = v
    sampled = tn - t0
    avg = sampled / (len(points) - 1)
    to_start, to_end = t0 - start, end - tn
    if inc > 0 and v0 >= 0:
        to_start = min(to_start, sampled * (v0 / inc))	# not before the counter's zero
    span = sampled
    span += to_start if to_start < avg * 1.1 else avg / 2
    span += to_end if to_end < avg * 1.1 else avg / 2
    return inc * span / sampled


def main():
    out, n, m, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    vm = "tv-testvmm[%s]" % open(out + "/vmm.pid").read().strip()
    t0, t1, rng, t2 = open(out + "/times").read().split()
    stat = [r for r in json.load(open(out + "/rec-stat.json")) if r["vm"] == vm]
    want = {}
    for r in stat:
        want[r["reason"]] = want.get(r["reason"], 0) + r["count"]
    assert (want.get("io"), want.get("cpuid"), want.get("hlt")) == (n + m, k, 1), \
        "stat of run 2: %s, want io %d, cpuid %d, hlt 1" % (want, n + m, k)

    # 1. increase() over [T0, T1]: exact for every reason with a sample at T0
    inc = by_reason(out, "inc")
    base = by_reason(out, "count0")
    total = by_reason(out, "count")
    print("window %s at T1=%s (T0=%s: the pause's last sample, io = run 1's %d)" % (rng, t1, t0, n + m))
    for reason, count in sorted(want.items()):
        if reason in base:
            assert inc.get(reason) == float(count), \
                "%s: increase() %s, stat %d" % (reason, inc.get(reason), count)
            assert total[reason] == base[reason] + count, (reason, total[reason], base[reason], count)
            print("  %-12s increase() %6d = stat %6d" % (reason, inc[reason], count))
        else:
            # born during run 2: its first scrape is increase()'s base
            first = total[reason] - inc.get(reason, 0.0)
            assert 0 < first <= count and total[reason] == count, (reason, inc.get(reason), total[reason], count)
            print("  %-12s increase() %6d = stat %6d - %d, its first scrape's value (series born in run 2)"
                  % (reason, inc.get(reason, 0), count, first))
    extra = set(inc) - set(want)
    assert not any(inc[r] for r in extra), "increase() of reasons stat did not see: %s" % extra

    # 2. not aligned to samples: Prometheus's extrapolation, to the formula
    end = float(t2)
    raw = {}
    for r in result(out, "raw"):
        pts = [(float(t), float(v)) for t, v in r["values"]]
        e = extrapolated_increase(pts, end - 120, end)
        if e is not None:
            raw[r["metric"]["reason"]] = raw.get(r["metric"]["reason"], 0.0) + e
    inc2 = by_reason(out, "inc2")
    assert set(inc2) == set(raw), (inc2, raw)
    for reason in sorted(inc2):
        assert abs(inc2[reason] - raw[reason]) <= 1e-6 * max(1.0, raw[reason]), \
            "%s: increase()[2m] %r, the formula on its samples %r" % (reason, inc2[reason], raw[reason])
    print("increase()[2m] at T1+0.5s (extrapolated to the window's ends) = the formula on the raw samples: %s"
          % {r: round(v, 2) for r, v in sorted(inc2.items())})

    # 3. p99 of run 2 within its bucket of stat's
    p99 = by_reason(out, "p99")
    for reason in ("io", "cpuid"):
        s = max(r["p99_ns"] for r in stat if r["reason"] == reason) / 1e9
        p = p99[reason]
        hi = min(b for b in BOUNDS if b >= p)
        lo = max([0] + [b for b in BOUNDS if b < hi])
        assert abs(p - s) <= hi - lo, "%s: PromQL p99 %.6f s, stat %.6f s, bucket (%g, %g]" % (reason, p, s, lo, hi)
        print("%s p99 of run 2: PromQL %.1f us, stat %.1f us, bucket (%.1f, %.1f] us"
              % (reason, p * 1e6, s * 1e6, lo * 1e6, hi * 1e6))
    assert result(out, "rule"), "the recording rule vm_reason:tracevisor_vm_exits:rate1m has no series"


if __name__ == "__main__":
    main()
