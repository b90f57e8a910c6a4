#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# Issue 6: `tracevisor sync` aligns dom0 and Xen with the bound it reports.
# On the patched Xen (records carry the TSC), `record --xen -e ...` brackets
# Xen records injected from dom0 with dom0 trace markers
# (doc/sync-probes.md, XEN_BEFORE/XEN_AFTER); sync must estimate xen/
# against host/ with the hull, report an accurate or approximate bound,
# count no causality violation, and the bound must hold: after the
# transform every Xen record lies within [before - bound, after + bound].
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"
patched_xen

run_lab xen '
TV=/opt/tracevisor/tracevisor
$TV record --xen -e sched:sched_switch --sync-interval 0.5 -o /tmp/s -- sleep 4 2>/out/rec.err || exit 20
$TV sync /tmp/s > /out/sync.out 2>&1 || exit 21
cp /tmp/s/sync/transforms /out/ || exit 22
$TV report --json /tmp/s | grep -E "\"(ftrace:raw_data|xen:xen_guest)\"" > /out/probes.json || exit 23
exit 0' patched LAB_XEN="$XEN_BIN"
expect_rc 0 "dom0 script on the patched Xen"

python3 - "$OUT" <<'PY' || fail "dom0/Xen sync (above)"
import json, struct, sys
out = sys.argv[1]
t = dict(l.rstrip("\n").split("=", 1) for l in open(out + "/transforms") if "=" in l)
print("xen: method=%s quality=%s offset_ns=%s drift_ppm=%s bound_ns=%s probes=%s pairs_checked=%s violations=%s %s" % tuple(
    t.get("xen." + k, "?") for k in ("method", "quality", "offset_ns", "drift_ppm", "bound_ns",
                                     "probes", "pairs_checked", "causality_violations", "message")))
ok = True
if t.get("xen.method") != "hull" or t.get("xen.via") != "host":
    print("xen not estimated with the hull against host"); ok = False
if t.get("xen.quality") not in ("accurate", "approximate"):
    print("xen quality %s" % t.get("xen.quality")); ok = False
bound = int(t.get("xen.bound_ns", "-1"))
if bound < 0:
    print("no bound reported"); ok = False
if int(t.get("xen.probes", "0")) < 10:
    print("too few probe pairs"); ok = False
if t.get("xen.causality_violations") != "0":
    print("causality violations"); ok = False
before, after, xen = {}, {}, {}
for line in open(out + "/probes.json"):
    e = json.loads(line)
    f = e["fields"]
    if e["event"] == "xen:xen_guest":
        d = f["data"]
        if (f["xen_event"] & 0xfff) == 0x476 and d[0] == 0x59535654:
            if f["has_tsc"] != 1:
                print("probe record without TSC"); ok = False
            xen[d[1] | d[2] << 32] = e["ts"]
    elif f.get("id") == 0x59535654 and len(f.get("buf", [])) >= 20:
        typ, _, seq = struct.unpack("<HHQ", bytes(f["buf"][:12]))
        {7: before, 8: after}.get(typ, {})[seq] = e["ts"]
seqs = sorted(set(xen) & set(before) & set(after))
if len(seqs) < 10:
    print("only %d complete dom0/Xen probe triples" % len(seqs)); ok = False
worst = 0
for s in seqs:
    # after the transform, Xen's record must lie in dom0's bracket, up to the bound
    worst = max(worst, before[s] - xen[s], xen[s] - after[s])
    if xen[s] < before[s] - bound or xen[s] > after[s] + bound:
        print("probe %d outside the bound: before %d xen %d after %d bound %d" % (s, before[s], xen[s], after[s], bound)); ok = False
print("%d triples checked; worst excursion outside the bracket %d ns (bound %d ns)" % (len(seqs), worst, bound))
sys.exit(0 if ok else 1)
PY
echo "PASS: dom0/Xen sync: $(grep -E '^xen\.(quality|bound_ns|probes|causality_violations)=' "$OUT/transforms" | tr '\n' ' ')" >&2
