#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor serve on a real KVM (this host's when usable, else the lab's
# nested SVM L1: kvm_run), scraped with busybox wget while the test VMM
# runs a known mix, its outputs checked here:
#  - promtool check metrics passes on every text output, and OpenMetrics
#    (Accept: application/openmetrics-text) parses with prometheus_client's
#    OpenMetrics parser;
#  - the test VMM's series: tracevisor_vm_exits_total io = 2(N+M), cpuid
#    = 2K, hlt = 2 exactly; each histogram's +Inf bucket = its _count, the
#    buckets cumulative; health: 2 programs, 0 lost;
#  - 100 test VMMs: each tracked under its own vm="tv-testvmm[PID]", the
#    scrape <= 1 MB, its duration (the exporter's own gauge) said, and
#    checked <= 50 ms where the KVM is this host's (L1 runs under TCG);
#  - SIGTERM: exit 0, no tracefs instance, the port free at once for a
#    second serve (tracepoint programs, --per-vcpu, --max-vms 2): vcpu
#    labels, the third VMM under vm="_other", the limit said in one line;
#    SIGINT ends that one with 0;
#  - --forget 1: a VMM gone longer loses its series, the next one counts;
#  - bad options: one line, exit 2; an address in use: one line, exit 1.
. "$(dirname "$0")/lib.bash"
require_root
command -v promtool >/dev/null || skip "promtool not installed (make deps: Debian prometheus)"
/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip "python3-prometheus-client not installed (make deps)"
N=300 M=200 K=100
T=$TV_TMP

# Bad input first (no KVM needed): one line each, status 2; an address in use, 1.
for bad in "--max-vms 0|invalid --max-vms" "--forget x|invalid --forget" "--listen nope|Invalid listen address" "extra|unexpected argument"; do
	# shellcheck disable=SC2086 # the options' words
	timeout 10 "$TV" serve ${bad%%|*} >"$T/bad.out" 2>"$T/bad.err"
	rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] || fail "serve ${bad%%|*}: status $rc"
	grep -q "${bad#*|}" "$T/bad.err" && [ "$(wc -l <"$T/bad.err")" = 1 ] ||
		fail "serve ${bad%%|*}: $(cat "$T/bad.err")"
done
python3 -c 'import socket,time,sys; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(15)' >"$T/port" &
HOLD=$!
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
timeout 10 "$TV" serve --listen "127.0.0.1:$(cat "$T/port")" >"$T/inuse.out" 2>"$T/inuse.err"
rc=$?
kill $HOLD 2>/dev/null
[ $rc = 1 ] && [ "$(wc -l <"$T/inuse.err")" = 1 ] && grep -q "Cannot listen on 127.0.0.1:.*errno=98" "$T/inuse.err" ||
	fail "an address in use: status $rc: $(cat "$T/inuse.err")"

# serve counts kvm_exit: a KVM whose test VMM fires none (PVM's) is no
# use here even where kvm_run would take it (it probes kvm_pio)
if [ "${TV_HOST_KVM:-}" != 0 ] && [ -c /dev/kvm ]; then
	timeout 60 "$TV" record -q -o "$T/probe" -e kvm:kvm_exit -- "$VMM" --outs 1 --quiet >/dev/null 2>&1
	[ "$("$TV" report "$T/probe" 2>/dev/null | grep -c kvm_exit)" -gt 0 ] || export TV_HOST_KVM=0
fi
# shellcheck disable=SC2016 # expanded by the KVM part's sh
kvm_run serve '
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up
URL=http://127.0.0.1:9477/metrics
ready() {	# FILE: until serve answers, its first scrape in FILE
	i=0
	until wget -q -O "$1" $URL 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 150 ] || { cat $OUT/serve*.err >&2; exit 30; }
		sleep 0.2
	done
}
stop() {	# SIGNAL NAME: stop serve ($S) with SIGNAL, its status in NAME.rc
	kill -$1 $S
	rc=0
	wait $S || rc=$?
	echo $rc > $OUT/$2.rc
	ls /sys/kernel/tracing/instances > $OUT/$2.instances
}
$TV serve > $OUT/serve.out 2> $OUT/serve.err &
S=$!
echo $S > $OUT/serve.pid
ready $OUT/m0.txt
$VMM --outs $N --ins $M --cpuids $K --repeat 2 --quiet &
echo $! > $OUT/vmm.pid
wait $!
wget -q -O $OUT/m1.txt $URL
wget -q --header "Accept: application/openmetrics-text; version=1.0.0" -O $OUT/m1.om $URL
j=0
: > $OUT/many.pids
while [ $j -lt 100 ]; do
	$VMM --outs 3 --ins 2 --cpuids 1 --quiet &
	echo $! >> $OUT/many.pids
	wait $!
	j=$((j + 1))
done
wget -q -O $OUT/m100.txt $URL
wget -q -O $OUT/m100b.txt $URL
stop TERM serve
# the port at once free; the tracepoint programs, per vCPU, 2 VMs at most
TV_BPF_TRACEPOINT=1 $TV serve --per-vcpu --max-vms 2 > $OUT/serve2.out 2> $OUT/serve2.err &
S=$!
echo $S > $OUT/serve2.pid
ready $OUT/m2-0.txt
: > $OUT/limit.pids
for j in 1 2 3; do	# a scrape after each: serve sees them in this order
	$VMM --outs 10 --cpuids 5 --quiet &
	echo $! >> $OUT/limit.pids
	wait $!
	wget -q -O $OUT/m2-$j.txt $URL
done
wget -q -O $OUT/m2.txt $URL
stop INT serve2
# --forget 1: a VMM gone for a second loses its series and its kernel rows
$TV serve --forget 1 > $OUT/serve3.out 2> $OUT/serve3.err &
S=$!
ready $OUT/m3-0.txt
$VMM --outs 7 --quiet &
echo $! > $OUT/forget1.pid
wait $!
wget -q -O $OUT/m3-a.txt $URL
sleep 1.5
wget -q -O $OUT/m3-b.txt $URL
$VMM --outs 9 --quiet &
echo $! > $OUT/forget2.pid
wait $!
wget -q -O $OUT/m3-c.txt $URL
stop TERM serve3
' N=$N M=$M K=$K
O=$KVM_OUT

for f in m0.txt m1.txt m100.txt m100b.txt m2.txt m3-a.txt m3-b.txt m3-c.txt; do
	promtool check metrics <"$O/$f" >"$T/promtool.out" 2>&1 || fail "promtool check metrics $f: $(cat "$T/promtool.out")"
done
echo "ok: promtool check metrics passes on 8 scrapes"
expect_eq "serve's status after SIGTERM" "$(cat "$O/serve.rc")" 0
expect_eq "serve's status after SIGINT" "$(cat "$O/serve2.rc")" 0
expect_eq "serve --forget 1's status after SIGTERM" "$(cat "$O/serve3.rc")" 0
# serve makes no tracefs instance (BPF on the tracepoints): none named after either
! grep -qE "^tracevisor-($(cat "$O/serve.pid")|$(cat "$O/serve2.pid"))\$" "$O/serve.instances" "$O/serve2.instances" ||
	fail "a tracefs instance of serve was left"
[ "$(grep -vc "BPF programs attached; /metrics on http://127.0.0.1:9477" "$O/serve.err")" = 0 ] ||
	fail "serve said more than its start: $(cat "$O/serve.err")"
grep -q "\-\-max-vms 2 reached: the exits of pid $(sed -n 3p "$O/limit.pids") " "$O/serve2.err" &&
	[ "$(grep -c "max-vms" "$O/serve2.err")" = 1 ] || fail "the --max-vms limit not said once: $(cat "$O/serve2.err")"

WHERE=$KVM_WHERE /usr/bin/python3 - "$O" $N $M $K <<'PY' || fail "serve's metrics"
import os, sys
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
o, n, m, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def samples(path, parse=text_string_to_metric_families):
    return [s for f in parse(open(path).read()) for s in f.samples]

def value(ss, name, **labels):
    got = [s.value for s in ss if s.name == name and all(s.labels.get(a) == b for a, b in labels.items())]
    return sum(got) if got else None

vmm = "tv-testvmm[%s]" % open(o + "/vmm.pid").read().strip()
s1 = samples(o + "/m1.txt")
want = {"io": 2 * (n + m), "cpuid": 2 * k, "hlt": 2}
got = {r: value(s1, "tracevisor_vm_exits_total", vm=vmm, reason=r) for r in want}
assert got == want, "%s: %s, want %s" % (vmm, got, want)
reasons = sorted({s.labels["reason"] for s in s1 if s.labels.get("vm") == vmm})
for r in reasons:
    b = sorted((float(s.labels["le"]), s.value) for s in s1 if s.name.endswith("_bucket")
               and s.labels["vm"] == vmm and s.labels["reason"] == r)
    assert all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), (r, b)
    cnt = value(s1, "tracevisor_vm_exit_latency_seconds_count", vm=vmm, reason=r)
    assert b[-1] == (float("inf"), cnt), (r, b[-1], cnt)
    assert cnt <= value(s1, "tracevisor_vm_exits_total", vm=vmm, reason=r)
assert not any("vcpu" in s.labels for s in s1), "a vcpu label without --per-vcpu"
assert value(s1, "tracevisor_bpf_programs_attached") == 2
assert value(s1, "tracevisor_events_lost_total") == 0, "lost"
om = samples(o + "/m1.om", om_families)
assert value(om, "tracevisor_vm_exits_total", vm=vmm, reason="io") == want["io"], "OpenMetrics"
print("serve: %s io %d cpuid %d hlt %d (the mix's), reasons %s, histograms consistent; OpenMetrics parsed" %
      (vmm, got["io"], got["cpuid"], got["hlt"], reasons))

many = ["tv-testvmm[%s]" % p.strip() for p in open(o + "/many.pids")]
s100 = samples(o + "/m100.txt")
vms = {s.labels["vm"] for s in s100 if s.name == "tracevisor_vm_exits_total"}
assert set(many) <= vms, "VMs missing: %s" % sorted(set(many) - vms)[:5]
for v in many:
    assert value(s100, "tracevisor_vm_exits_total", vm=v, reason="io") == 5, v
size = os.path.getsize(o + "/m100.txt")
ms = value(samples(o + "/m100b.txt"), "tracevisor_scrape_duration_seconds") * 1000
nser = len({(s.labels["vm"], s.labels["reason"]) for s in s100 if s.name == "tracevisor_vm_exits_total"})
print("100 VMs: %d VMs, %d series, %d bytes, scrape %.1f ms (%s)" % (len(vms), nser, size, ms, os.environ["WHERE"]))
assert size <= 1 << 20, "scrape of 100 VMs: %d bytes, over 1 MB" % size
if os.environ["WHERE"] == "host":
    assert ms <= 50, "scrape of 100 VMs took %.1f ms" % ms

pids = [p.strip() for p in open(o + "/limit.pids")]
s2 = samples(o + "/m2.txt")
vms = {s.labels["vm"] for s in s2 if s.name == "tracevisor_vm_exits_total"}
assert "tv-testvmm[%s]" % pids[2] not in vms and "_other" in vms, vms
assert value(s2, "tracevisor_vm_exits_total", vm="_other", reason="io") == 10
assert value(s2, "tracevisor_vms_over_limit") >= 1 and value(s2, "tracevisor_vms_tracked") == 2
assert all("vcpu" in s.labels for s in s2 if s.name == "tracevisor_vm_exits_total"), "no vcpu label with --per-vcpu"
assert value(s2, "tracevisor_vm_exits_total", vm="tv-testvmm[%s]" % pids[0], reason="io", vcpu="0") == 10
print("--max-vms 2: the third VMM under _other; --per-vcpu labels; tracepoint programs")

a, b, c = (samples(o + "/m3-%s.txt" % x) for x in "abc")
v1 = "tv-testvmm[%s]" % open(o + "/forget1.pid").read().strip()
v2 = "tv-testvmm[%s]" % open(o + "/forget2.pid").read().strip()
assert value(a, "tracevisor_vm_exits_total", vm=v1, reason="io") == 7, "before --forget"
assert value(b, "tracevisor_vm_exits_total", vm=v1) is None and value(b, "tracevisor_vms_tracked") == 0, "not forgotten"
assert value(c, "tracevisor_vm_exits_total", vm=v2, reason="io") == 9 and value(c, "tracevisor_vm_exits_total", vm=v1) is None
print("--forget 1: a VMM gone 1.5 s lost its series (and rows); the next VMM counted exactly")
PY
echo "PASS: serve: exact counts of the mix, promtool, OpenMetrics, 100 VMs, SIGTERM/SIGINT clean, --max-vms, errors" >&2
