#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""xen_view_check.py T D1 D2: tests/e2e/xen-domu-view.sh's checks of stat,
report, CTF and Perfetto output in T (stat.json, xa.txt: xenalyze --summary
--show-default-domain-summary, r.json, ctf/, bt.txt, p.json); D1, D2: the
domids of guest:d1 (PVH) and guest:d2."""
import collections
import json
import re
import sys

T, d1, d2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True


def bad(msg):
    global ok
    print("FAIL: " + msg)
    ok = False


from xenalyze_names import NAMES
from xenalyze_start import StartOfDay

# -- report's events per domain, and the exits xenalyze cannot attribute
# at the start (xenalyze_start.py)
rep, sod = collections.Counter(), StartOfDay()
for line in open(T + "/r.json"):
    e = json.loads(line)
    rep[e["domain"]] += 1
    if e["domain"] == "xen":
        sod.event(e)

# -- stat per domain, vCPU and reason against xenalyze: timed exits (the
# sum of a row's histogram) are the ones xenalyze counts
rows = json.load(open(T + "/stat.json"))
xen = [r for r in rows if r["mode"] == "xen"]
timed = collections.Counter()
for r in xen:
    if r["reason"].startswith("vmexit:"):
        timed[(r["vm"], r["reason"][7:])] += sum(r.get("hist_log2", []))
xa, dom = collections.Counter(), None
for line in open(T + "/xa.txt"):
    m = re.match(r"\|-- Domain (\d+) --\|", line)
    if m:
        dom = "d" + m.group(1)
    if line.startswith("|-- Default domain --|"):
        dom = "default"
    m = re.match(r" VMEXIT_(\w+)\s+(\d+) ", line)
    if m:
        xa[(dom, NAMES.get(m.group(1), m.group(1)))] += int(m.group(2))
# exact: stat = xenalyze + what xenalyze cannot attribute at the start
print("timed exits per domain and reason (tracevisor stat = xenalyze + its default domain"
      " + open at the CPU's first switch):")
keys = set(timed) | set(k for k in xa if k[0] != "default")
for k in sorted(keys, key=lambda k: (k[0], -max(timed[k], xa[k]))):
    want = xa[k] + sod.closed[k] + sod.open[k]
    print("  %-4s %-12s %8d = %8d + %d + %d%s" % (k[0], k[1], timed[k], xa[k], sod.closed[k],
                                               sod.open[k], "" if timed[k] == want else "  DIFFER"))
    if timed[k] != want:
        bad("%s %s: %d timed exits, xenalyze %d + %d in its default domain + %d open at the start"
            % (k[0], k[1], timed[k], xa[k], sod.closed[k], sod.open[k]))
default = collections.Counter()
for (d, r), n in sod.closed.items():
    default[r] += n
for r in set(default) | set(k[1] for k in xa if k[0] == "default"):
    if default[r] != xa[("default", r)]:
        bad("xenalyze's default domain has %d %s exits, the start of the CPUs %d"
            % (xa[("default", r)], r, default[r]))
print("xenalyze's default domain: %s (the start of the CPUs: %s), open at the first switch: %s"
      % (dict((k[1], v) for k, v in xa.items() if k[0] == "default"), dict(default), dict(sod.open)))
d1_exits = sum(v for k, v in timed.items() if k[0] == "d%d" % d1)
if d1_exits < 1000:
    bad("only %d timed exits of d1 (PVH)" % d1_exits)
by = {(r["vm"], r["vcpu"], r["reason"]): r for r in xen}
for d in (0, d1, d2):
    for st in ("running", "runnable"):
        r = by.get(("d%d" % d, "0", "runstate:" + st))
        if not r or not r["total_ns"] or r["p50_ns"] is None:
            bad("d%d vCPU 0: no timed runstate:%s row" % (d, st))
    if not any(k[0] == "d%d" % d and k[1] == "all" and k[2].startswith("hypercall:") for k in by):
        bad("d%d: no hypercall rows per domain" % d)
for r in xen:
    if r["vm"] == "d%d" % d1 and r["reason"].startswith("vmexit:") and r["count"] > 100:
        if not 0 < r["p50_ns"] <= r["p99_ns"] <= r["max_ns"] <= r["total_ns"]:
            bad("d1 %s: percentiles out of order: %s" % (r["reason"], r))
doms = collections.Counter(r["domain"] for r in xen)
print("stat rows per session domain: %s" % dict(doms))
for d in ("host", "xen", "guest:d1", "guest:d2"):
    if not doms[d]:
        bad("no stat row of %s" % d)

# -- report and CTF (babeltrace2): the same events per domain
order = {}
for line in open(T + "/ctf/metadata"):
    m = re.match(r"\s*domain_(\d+) = \"(.*)\";", line)
    if m:
        order[int(m.group(1))] = m.group(2)
bt = collections.Counter()
for line in open(T + "/bt.txt"):
    n, _, _, i = line.split()
    bt[order[int(i)]] += int(n)
print("events per domain: report %s, babeltrace2 %s" % (dict(rep), dict(bt)))
if rep != bt:
    bad("babeltrace2 counts differ from report")
for d in ("host", "xen", "guest:d1", "guest:d2"):
    if not rep[d]:
        bad("report has no event of %s" % d)

# -- Perfetto: one instant per event; per Xen domain a process with a
# runstate track per vCPU, d1's exits as slices (as many as stat timed)
inst, slices, procs, threads = 0, collections.Counter(), {}, {}
for line in open(T + "/p.json"):
    line = line.rstrip(",\n")
    if not line.startswith("{\"ph\""):
        continue
    e = json.loads(line)
    if e["ph"] == "i":
        inst += 1
    elif e["ph"] == "X":
        slices[(e["pid"], e["tid"], e["cat"])] += 1
    elif e["name"] == "process_name":
        procs[e["pid"]] = e["args"]["name"]
    elif e["name"] == "thread_name":
        threads[(e["pid"], e["tid"])] = e["args"]["name"]
print("perfetto: %d instants, slices %s; processes %s"
      % (inst, dict(slices), sorted(procs.values())))
if inst != sum(rep.values()):
    bad("perfetto has %d instants, report %d events" % (inst, sum(rep.values())))
P = 3000000
for d, label in ((0, "Xen d0: host (dom0)"), (d1, "Xen d%d: guest:d1" % d1),
                 (d2, "Xen d%d: guest:d2" % d2)):
    if procs.get(P + d) != label:
        bad("perfetto: process of d%d is %r" % (d, procs.get(P + d)))
    if not slices[(P + d, 1, "runstate")] or threads.get((P + d, 1)) != "vCPU 0 runstate":
        bad("perfetto: no runstate slices for d%d vCPU 0" % d)
ex = slices[(P + d1, 0, "vmexit")]
if ex != d1_exits or threads.get((P + d1, 0)) != "vCPU 0 exits":
    bad("perfetto: %d exit slices of d1, stat timed %d" % (ex, d1_exits))
for name in ("xen CPUs", "host CPUs", "guest:d1 CPUs", "guest:d2 CPUs"):
    if name not in procs.values():
        bad("perfetto: no %s" % name)
sys.exit(0 if ok else 1)
