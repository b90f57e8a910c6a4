#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# Real Xen (lab `xen`, Debian's hypervisor): `tracevisor record --xen` in dom0
# under a fork/exec workload, stopped with SIGINT like a user would; then
# Xen's own xentrace on the same workload in the same dom0, imported.
# Checks: sched and hypercall records for both of dom0's vCPUs, 0 lost at
# the default size, the event mask restored, both recordings decoding to
# the same event classes with comparable counts, --xen with -e adding
# dom0's kernel trace beside Xen's, sync refusing a dom0/Xen bound from
# probe records stock Xen wrote without the TSC, and a recording straight
# onto the lab's 9p /out (a write from the foreign mapping fails there with
# EFAULT: the consumer copies), read here on the host.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"

run_lab xen '
TV=/opt/tracevisor/tracevisor
work() { i=0; while [ $i -lt 40 ]; do /bin/true; i=$((i+1)); done; }
# in the background, stopped by SIGINT after the workload (same for both)
consume() { "$@" & P=$!; sleep 1; work; sleep 1; kill -INT $P; wait $P; }
$TV record --xen --xen-events sched -o /tmp/masked -- true 2>/out/masked.err || exit 20
consume $TV record --xen -o /tmp/tv 2>/out/tv.err || exit 21
consume xentrace -D -e all /tmp/x.trace >/out/xentrace.log 2>&1
$TV import xentrace /tmp/x.trace -o /tmp/xt 2>/out/import.err || exit 22
$TV record --xen -e sched:sched_switch -o /tmp/both -- sh -c "sleep 1" 2>/out/both.err || exit 23
$TV sync /tmp/both > /out/both.sync 2>&1; cp /tmp/both/sync/transforms /out/both.transforms
# read on the host (report, stat): decoding their 60k+ records each under
# TCG in dom0 is slow; the meta counted cpu*.xen as drained: recounted
# there.  One tar file: a session is ~180 directories of format files, which
# cp -a over 9p took minutes to write
tar -C /tmp -cf /out/sessions.tar tv xt masked both || exit 25
cp /tmp/both/session.meta /out/both.session.meta
grep -q " /out 9p " /proc/mounts && echo 9p > /out/ninep.fs
consume $TV record --xen -o /out/ninep 2>/out/ninep.err || exit 27
exit 0' xen LAB_TIMEOUT=900 LAB_XEN_ARGS=dom0_max_vcpus=2
expect_rc 0 "dom0 script"
tar -C "$OUT" -xf "$OUT/sessions.tar" || fail "cannot unpack the dom0 sessions"
# per-class counts, and dom0 vCPUs seen in runstate and hypercall records
summary() {
	"$TV" report "$OUT/$1" >"$T/$1.r.txt" || return 1
	awk "{print \$4}" "$T/$1.r.txt" | sort | uniq -c >"$OUT/$1.classes"
	# first and last time stamps: counts are compared as rates
	awk "NR == 1 {print \$3} END {print \$3}" "$T/$1.r.txt" | tr -d : >"$OUT/$1.span"
	grep xen_runstate_change "$T/$1.r.txt" | grep -o "domid=0 vcpuid=[0-9]*" | sort | uniq -c >"$OUT/$1.dom0"
	grep xen_hypercall "$T/$1.r.txt" | awk "{print \$5, \$6}" | grep "^d0 " | sort | uniq -c >>"$OUT/$1.dom0"
}
summary tv && summary xt && summary masked || fail "report of the dom0 recordings failed"
"$TV" stat "$OUT/tv" >"$OUT/stat.txt" || fail "stat of the dom0 recording failed"
"$TV" report "$OUT/both" >"$T/b.txt" || fail "report of the --xen -e recording failed"
echo "$(grep -c " sched:sched_switch " "$T/b.txt") $(grep -c " xen:xen_" "$T/b.txt")" >"$OUT/both.counts"

# onto 9p: recorded whole, and read on the host
[ -s "$OUT/ninep.fs" ] || fail "/out is not a 9p mount in the lab: the 9p case tests nothing"
grep -q "Cannot write" "$OUT/ninep.err" && fail "record onto 9p: $(cat "$OUT/ninep.err")"
n9=$(sed -n "s/^events_total=//p" "$OUT/ninep/xen/meta")
[ "${n9:-0}" -gt 500 ] || fail "record onto 9p: only ${n9:-no} records"
"$TV" report "$OUT/ninep" >"$OUT/ninep.txt" || fail "report of the 9p recording failed"
r9=$(grep -c " xen:xen_" "$OUT/ninep.txt")
[ "$r9" -gt 500 ] || fail "record onto 9p: the meta counts $n9 records, report reads $r9"
echo "onto 9p: $n9 records recorded, report reads $r9 xen events" >&2

meta() { sed -n "s/^$2=//p" "$OUT/$1/xen/meta"; }
[ "$(meta tv lost_total)" = 0 ] || fail "lost records at the default size: $(meta tv lost_total)"
[ "$(meta tv events_total)" -gt 500 ] || fail "only $(meta tv events_total) records"
# --xen-events sched changed the mask; it was put back, and the next run found it
# (sched, and the gen class every recording has since it carries Xen's time scales)
[ "$(meta masked evt_mask)" = 0x0003f000 ] || fail "--xen-events sched not applied: $(meta masked evt_mask)"
[ "$(meta masked evt_mask_after)" = "$(meta masked evt_mask_before)" ] || fail "mask not restored"
[ "$(meta tv evt_mask_after)" = "$(meta tv evt_mask_before)" ] || fail "mask not restored after SIGINT"
[ "$(meta tv evt_mask_before)" = "$(meta masked evt_mask_before)" ] ||
	fail "next recording found mask $(meta tv evt_mask_before), not $(meta masked evt_mask_before)"
grep -q "xen_hypercall" "$OUT/masked.classes" && fail "--xen-events sched recorded hypercalls"
grep -q "^domains=host,xen$" "$OUT/both.session.meta" || fail "--xen -e: session lacks host,xen"
read -r n_host n_xen <"$OUT/both.counts"
[ "$n_host" -gt 0 ] || fail "--xen -e: no dom0 kernel events"
[ "$n_xen" -gt 0 ] || fail "--xen -e: no Xen events"
# stock Xen stamps the dom0/Xen sync records without the TSC: no bound is claimed
grep -q "^xen.quality=insufficient$" "$OUT/both.transforms" &&
	grep -q "^xen.message=.*no TSC" "$OUT/both.transforms" ||
	fail "stock Xen: sync claims a dom0/Xen relation: $(grep "^xen\." "$OUT/both.transforms" | tr "\n" " ")"

python3 - "$OUT" <<'PY' || fail "classes or counts differ (above)"
import collections, sys
def load(name):
    c = collections.Counter()
    for suffix in ("classes", "dom0"):
        for line in open("%s/%s.%s" % (sys.argv[1], name, suffix)):
            n, key = line.split(None, 1)
            c[key.strip()] += int(n)
    return c
tv, xt = load("tv"), load("xt")
def span(name):
    a, b = open("%s/%s.span" % (sys.argv[1], name)).read().split()
    return float(b) - float(a)
stv, sxt = span("tv"), span("xt")
print("recorded %.2f s with tracevisor, %.2f s with xentrace; per second:" % (stv, sxt))
print("%-34s %10s %10s" % ("class", "tracevisor", "xentrace"))
for k in sorted(set(tv) | set(xt)):
    print("%-34s %10.0f %10.0f" % (k, tv[k] / stv, xt[k] / sxt))
ok = True
for k in ("domid=0 vcpuid=0", "domid=0 vcpuid=1", "d0 v0", "d0 v1"):
    if not tv[k]:
        print("no records for dom0 vCPU %s from tracevisor" % k); ok = False
for k in {k for k in set(tv) | set(xt) if max(tv[k], xt[k]) >= 50 and k.startswith("xen:")}:
    rtv, rxt = tv[k] / stv, xt[k] / sxt
    if not tv[k] or not xt[k] or max(rtv, rxt) > 3 * min(rtv, rxt):
        print("not comparable: %s %.0f/s vs %.0f/s" % (k, rtv, rxt)); ok = False
sys.exit(0 if ok else 1)
PY
# the recorder counts records window by window as it drains: the same as
# counting its files (records, lost, wraps, bytes per CPU)
python3 - "$OUT/tv/xen" <<'PY' || fail "meta counts differ from the files (above)"
import glob, os, struct, sys
d = sys.argv[1]
meta = dict(l.rstrip("\n").split("=", 1) for l in open(d + "/meta") if "=" in l)
ok = True
for path in sorted(glob.glob(d + "/cpu*.xen")):
    cpu = os.path.basename(path)[3:-4]
    b = open(path, "rb").read()
    pos = recs = lost = wraps = 0
    while pos + 4 <= len(b):
        hdr, = struct.unpack_from("<I", b, pos)
        size = 4 + (8 if hdr >> 31 else 0) + 4 * ((hdr >> 28) & 7)
        if pos + size > len(b):
            break
        ev = hdr & 0x0fffffff
        if ev == 0x0001f002:
            wraps += 1
        elif ev == 0x0001f001:
            lost += struct.unpack_from("<I", b, pos + (12 if hdr >> 31 else 4))[0] if (hdr >> 28) & 7 else 0
        else:
            recs += 1
        pos += size
    got = tuple(int(meta["cpu%s.%s" % (cpu, k)]) for k in ("events", "lost", "wraps", "bytes"))
    want = (recs, lost, wraps, len(b))
    print("cpu%s: meta %s, files %s" % (cpu, got, want))
    ok &= got == want
sys.exit(0 if ok else 1)
PY
grep -q "runstate:running" "$OUT/stat.txt" || fail "stat: no runstate rows"
echo "PASS: tracevisor $(meta tv events_total) records, 0 lost; xentrace import $(meta xt events_total) records, same classes; mask restored" >&2
