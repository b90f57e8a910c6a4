#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# tracevisor serve --xen in dom0 of the lab's `xen` topology (issue #26
# point 1, Xen's stream in dom0): one PVH domU d1 (lab-domu, the fork/exec
# workload of XEN_DOMUS_START's /tmp/domu.sh) makes exits while dom0 runs
# `serve --xen --per-vcpu` on its loopback; /metrics is scraped with wget
# three times, 3 s apart.  Checks: promtool check metrics passes on every
# scrape (and on the OpenMetrics one); d1's series are labelled with its
# xl name (vm="d1") and its UUID as `xl list -v` prints it (uuid="...",
# on every series of d1; none on dom0's, whose UUID is nil), carry SVM
# exit reasons, and its counters rise from
# one scrape to the next; every histogram is coherent (buckets cumulative,
# _count = +Inf <= the exits, _sum > 0); serve stops with status 0 on
# SIGTERM, removes its temporary session, and xentrace starts after it
# (Xen's tracing released).  Then `serve --xen --flight-recorder 8M
# --guest xen:d1`: d1's exits counted on the flight recorder's rings
# (rising), d1's agent streaming over its PV console channel
# (tracevisor_guest_stream_up 1, bytes > 0), promtool passes; POST
# /snapshot with an Alertmanager payload for vm d1 writes snapshot-1 with
# alert=/alert_vm= in its session.meta, Xen's rings (xen/) and d1's agent
# ring (guest-d1/); status 0 on SIGTERM.  One-line errors: --xen --guest without --flight-recorder; a
# second serve --xen while one runs (Xen's trace taken).
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"
command -v promtool >/dev/null || skip "promtool not installed (make deps: Debian prometheus)"

DOM0="$XEN_DOMUS_START"'
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up
xen_domu1_start
$TV serve --xen --guest xen:d1 >/out/bad-guest.out 2>/out/bad-guest.err; echo $? >/out/bad-guest.rc
xl list -v >/out/xl-list-v.txt 2>&1
# a failure leaves nothing running on the (shared) machine
die() { kill $S 2>/dev/null; wait $S 2>/dev/null; xl destroy d1; exit $1; }
mkdir -p /tmp/st
TMPDIR=/tmp/st $TV serve --xen --per-vcpu --listen 127.0.0.1:9477 >/out/serve.out 2>/out/serve.err & S=$!
n=0
until wget -q -O /out/m0.prom http://127.0.0.1:9477/metrics 2>/dev/null; do
	n=$((n+1)); [ $n -gt 100 ] && die 23; sleep 0.1
done
ls /tmp/st >/out/tmp-during
$TV serve --xen --listen 127.0.0.1:9478 >/dev/null 2>/out/busy.err; echo $? >/out/busy.rc
for i in 1 2 3; do
	sleep 3
	wget -q -O /out/m$i.prom http://127.0.0.1:9477/metrics || die 24
done
wget -q -O /out/om.prom --header "Accept: application/openmetrics-text; version=1.0.0" http://127.0.0.1:9477/metrics; echo $? >/out/om.rc
kill -TERM $S; wait $S; echo $? >/out/serve.rc
ls /tmp/st >/out/tmp-left
xentrace -D -e all -T 2 /tmp/xt-after.bin >/out/xt-after.out 2>&1; echo $? >/out/xt-after.rc
wc -c </tmp/xt-after.bin >/out/xt-after.size 2>/dev/null
# the flight recorder: Xen records into its rings, serve counts on them,
# and d1'"'"'s agent streams to it over the PV console channel
TMPDIR=/tmp/st $TV serve --xen --flight-recorder 8M -o /tmp/sf --guest xen:d1 --listen 127.0.0.1:9479 >/out/serve-g.out 2>/out/serve-g.err & S=$!
n=0
until wget -q -O /out/g0.prom http://127.0.0.1:9479/metrics 2>/dev/null; do
	n=$((n+1)); [ $n -gt 600 ] && die 26; sleep 0.1
done
sleep 5
wget -q -O /out/g1.prom http://127.0.0.1:9479/metrics || die 27
# an alert for d1: a snapshot of Xen'"'"'s rings and d1'"'"'s agent ring
wget -q -O /out/post.out --post-data '"'"'{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"XenExitSlow","vm":"d1"}}]}'"'"' \
	http://127.0.0.1:9479/snapshot 2>/out/post.err; echo $? >/out/post.rc
kill -TERM $S; wait $S; echo $? >/out/serve-g.rc
ls /tmp/sf >/out/sf.ls; ls -R /tmp/sf/snapshot-1 >/out/snap1.ls 2>&1; cp /tmp/sf/snapshot-1/session.meta /out/snap1.meta 2>/dev/null
xl destroy d1
exit 0'
run_lab xen "$DOM0" xen LAB_TIMEOUT=600
expect_rc 0 "dom0 script"

[ "$(cat "$OUT/bad-guest.rc")" = 2 ] || fail "serve --xen --guest without --flight-recorder: exit $(cat "$OUT/bad-guest.rc")"
[ "$(wc -l <"$OUT/bad-guest.err")" = 1 ] && grep -q -- '--guest records the guests in the flight recorder' "$OUT/bad-guest.err" ||
	fail "serve --xen --guest without --flight-recorder: $(cat "$OUT/bad-guest.err")"
[ "$(cat "$OUT/post.rc")" = 0 ] && grep -qx 'snapshot /tmp/sf/snapshot-1' "$OUT/post.out" ||
	fail "POST /snapshot to serve --xen: rc $(cat "$OUT/post.rc"): $(cat "$OUT/post.out" "$OUT/post.err")"
grep -qx 'alert=XenExitSlow' "$OUT/snap1.meta" && grep -qx 'alert_vm=d1' "$OUT/snap1.meta" ||
	fail "the alert's snapshot: session.meta $(grep alert "$OUT/snap1.meta" 2>/dev/null | tr '\n' ' ')"
sed -n '2,/^$/p' "$OUT/snap1.ls" | grep -qx xen && sed -n '2,/^$/p' "$OUT/snap1.ls" | grep -qx guest-d1 ||
	fail "the alert's snapshot has no xen/ or guest-d1/: $(head -n 12 "$OUT/snap1.ls" | tr '\n' ' ')"
[ "$(cat "$OUT/serve-g.rc")" = 0 ] || fail "serve --xen --flight-recorder --guest exited $(cat "$OUT/serve-g.rc") on SIGTERM: $(tail -n 5 "$OUT/serve-g.err")"
[ "$(cat "$OUT/busy.rc")" != 0 ] || fail "a second serve --xen ran beside the first"
[ "$(wc -l <"$OUT/busy.err")" = 1 ] && grep -q 'another trace consumer running' "$OUT/busy.err" ||
	fail "second serve --xen: $(cat "$OUT/busy.err")"
[ "$(cat "$OUT/serve.rc")" = 0 ] || fail "serve --xen exited $(cat "$OUT/serve.rc") on SIGTERM: $(tail -n 5 "$OUT/serve.err")"
grep -q '^tracevisor-serve-xen\.' "$OUT/tmp-during" || fail "serve --xen's temporary session not in TMPDIR: $(cat "$OUT/tmp-during")"
[ ! -s "$OUT/tmp-left" ] || fail "serve --xen left its temporary session: $(cat "$OUT/tmp-left")"
[ "$(cat "$OUT/xt-after.rc")" = 0 ] && [ "$(cat "$OUT/xt-after.size" 2>/dev/null || echo 0)" -gt 0 ] ||
	fail "xentrace after serve --xen: rc $(cat "$OUT/xt-after.rc"): $(tail -n 3 "$OUT/xt-after.out")"
# promtool reads the text format: the OpenMetrics scrape is checked for its
# own marks (busybox's wget may lack --header: then host/serve-*.sh's alone)
if [ "$(cat "$OUT/om.rc")" = 0 ]; then
	[ "$(tail -n 1 "$OUT/om.prom")" = "# EOF" ] && grep -q '^# TYPE tracevisor_vm_exits counter$' "$OUT/om.prom" &&
		grep -q '^# UNIT tracevisor_vm_exit_latency_seconds seconds$' "$OUT/om.prom" ||
		fail "the OpenMetrics scrape: $(head -n 3 "$OUT/om.prom")"
else
	echo "serve --xen: no OpenMetrics scrape (this wget has no --header)" >&2
fi
grep -q "^# HELP tracevisor_vm_exits_total VM exits counted at Xen's VMEXIT trace records" "$OUT/m3.prom" ||
	fail "the exits' help: $(grep "^# HELP tracevisor_vm_exits_total" "$OUT/m3.prom")"
for f in m0 m1 m2 m3 g0 g1; do
	promtool check metrics <"$OUT/$f.prom" >"$T/$f.promtool" 2>&1 || fail "promtool check metrics on $f: $(head -n 5 "$T/$f.promtool")"
done

python3 - "$OUT" <<'PY' || fail "serve --xen's metrics (above)"
import re, sys
d = sys.argv[1]
# xl list -v: Name ID Mem VCPUs State Time(s) UUID ...; a domain's UUID as Xen holds it
UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
xl = {}
for l in open("%s/xl-list-v.txt" % d):
    m = re.match(r'^(\S+)\s+\d+\s.*?\s(' + UUID + r')(\s|$)', l)
    if m:
        xl[m.group(1)] = m.group(2)
assert "d1" in xl, "no UUID of d1 in xl list -v: %s" % open("%s/xl-list-v.txt" % d).read()
line = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')
def load(name):
    out = {}
    for l in open("%s/%s.prom" % (d, name)):
        m = line.match(l.strip())
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
            out[(m.group(1), tuple(sorted(labels.items())))] = float(m.group(3))
    return out
def exits(s, vm):
    return {dict(k[1])["reason"] + "/v" + dict(k[1]).get("vcpu", "-"): v for k, v in s.items()
            if k[0] == "tracevisor_vm_exits_total" and dict(k[1]).get("vm") == vm}
scrapes = [load("m%d" % i) for i in range(4)]
totals = [sum(exits(s, "d1").values()) for s in scrapes]
assert totals[1] > 0, "no exits of vm=\"d1\" after 3 s: %s" % sorted({dict(k[1]).get("vm") for k in scrapes[1]})
assert totals[1] < totals[2] < totals[3], "d1's exits do not rise: %s" % totals
svm = {"io", "npf", "hlt", "cpuid", "msr", "rdtsc", "vmmcall", "intr", "interrupt", "vintr", "pause", "nmi", "smi"}
reasons = {r.split("/")[0] for r in exits(scrapes[3], "d1")}
assert reasons & svm, "d1 has no SVM exit reason: %s" % reasons
for i in range(1, 4):   # counters only grow
    a, b = exits(scrapes[i - 1], "d1"), exits(scrapes[i], "d1")
    assert all(b.get(k, 0) >= v for k, v in a.items()), "a counter fell: %s -> %s" % (a, b)
s = scrapes[3]
n = 0
for (name, labels), v in s.items():
    if name != "tracevisor_vm_exit_latency_seconds_count":
        continue
    lab = dict(labels)
    buckets = sorted((float("inf") if dict(k[1])["le"] == "+Inf" else float(dict(k[1])["le"]), val)
                     for k, val in s.items() if k[0] == "tracevisor_vm_exit_latency_seconds_bucket" and
                     {x: y for x, y in k[1] if x != "le"} == lab)
    assert len(buckets) == 14, "%s: %d buckets" % (lab, len(buckets))
    assert all(buckets[j][1] <= buckets[j + 1][1] for j in range(13)), "%s: not cumulative: %s" % (lab, buckets)
    assert buckets[-1][1] == v, "%s: +Inf %s != _count %s" % (lab, buckets[-1][1], v)
    assert v <= s[("tracevisor_vm_exits_total", labels)], "%s: more timed than exits" % lab
    if v:
        assert s[("tracevisor_vm_exit_latency_seconds_sum", labels)] > 0, "%s: _sum 0" % lab
    n += 1
assert n, "no histogram"
timed = sum(v for (name, labels), v in s.items()
            if name == "tracevisor_vm_exit_latency_seconds_count" and dict(labels)["vm"] == "d1")
assert timed > 0.5 * totals[3], "d1: %d of %d exits timed" % (timed, totals[3])
# the uuid label: xl's for d1 on every series of its (both metrics), none for a nil UUID
for (name, labels), v in list(s.items()) + list(load("g1").items()):
    lab = dict(labels)
    if not name.startswith("tracevisor_vm_exit") or lab.get("vm") not in xl:
        continue
    want = None if xl[lab["vm"]] == "00000000-0000-0000-0000-000000000000" else xl[lab["vm"]]
    assert lab.get("uuid") == want, "%s{%s}: uuid %s, xl list -v says %s" % (name, lab, lab.get("uuid"), xl[lab["vm"]])
d1_uuid = {dict(k[1]).get("uuid") for k in s if dict(k[1]).get("vm") == "d1"}
# --flight-recorder --guest xen:d1: exits counted on the flight recorder's
# rings, d1's agent streaming (up, bytes rising)
g = [load("g0"), load("g1")]
gexits = [sum(exits(x, "d1").values()) for x in g]
assert gexits[1] > gexits[0] >= 0 and gexits[1] > 0, "flight recorder: d1's exits %s" % gexits
def guest(x, name):
    return x.get((name, (("guest", "d1"),)))
assert guest(g[1], "tracevisor_guest_stream_up") == 1, "d1's stream not up: %s" % guest(g[1], "tracevisor_guest_stream_up")
gb = [guest(x, "tracevisor_guest_stream_bytes_total") or 0 for x in g]
assert gb[1] > 0, "d1's stream bytes: %s" % gb
print("serve --xen --flight-recorder --guest xen:d1: d1's exits %s, its stream's bytes %s" % ([int(x) for x in gexits], gb),
      file=sys.stderr)
print("serve --xen: d1's exits over 4 scrapes %s, reasons %s, %d histograms, %d of the last's exits timed, d1's uuid %s (xl: %s)" %
      ([int(t) for t in totals], sorted(reasons), n, timed, sorted(d1_uuid), xl["d1"]), file=sys.stderr)
PY
exit 0
