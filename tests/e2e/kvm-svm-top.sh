#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1 script is single-quoted on purpose
# tracevisor top, live, on a real SVM KVM host (the lab's nested L1): while
# the test VMM runs a known mix (and then a Linux L2 boots), top --json
# gives per-interval rows that, summed, are exactly `stat` of the recording
# top kept (-o): every (vm, vcpu, reason) count, total and max; io and cpuid
# exact against the mix; 0 lost; p50/p99 equal to stat's for every row that
# falls in one interval.  Ctrl-C (SIGINT) ends top with the session complete
# and no tracefs instance left.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
N=300 M=200 K=100

run_lab kvm '
PATH=/opt/tracevisor:$PATH
top_until_int() {	# NAME: top -o /out/NAME in the background until SIGINT
	tracevisor top --json --interval 0.5 -o /out/$1 > /out/$1.jsonl 2> /out/$1.err &
	TOP=$!
	for i in $(seq 100); do [ -s /out/$1.jsonl ] && break; sleep 0.1; done
	[ -s /out/$1.jsonl ] || { echo "top gave no interval in 10 s" >&2; cat /out/$1.err >&2; exit 30; }
}
stop_top() {
	sleep 1
	kill -INT $TOP
	wait $TOP || { cat /out/$1.err >&2; exit 31; }
	tracevisor stat --json /out/$1 > /out/$1-stat.json || exit 32
	ls /sys/kernel/tracing/instances > /out/$1-instances
}
top_until_int vmm
/opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 || exit 21
stop_top vmm
printf "%s\n" "echo L2 up" "exit 0" > /tmp/l2.sh
top_until_int l2
lab-guest --cid 3 --timeout 180 /tmp/l2.sh /tmp/l2 || exit 24
stop_top l2
tracevisor top --replay /out/l2 --speed 0 --interval 0.5 --json > /out/l2-replay.jsonl || exit 33
# the same mix aggregated in the kernel (BPF), recorded beside it for stat
TRACEVISOR_DEBUG=1 tracevisor top --bpf --json --interval 2 > /out/bpf.jsonl 2> /out/bpf.err &
TOP=$!
for i in $(seq 100); do [ -s /out/bpf.jsonl ] && break; sleep 0.1; done
tracevisor record -q -o /out/bpfrec -e kvm:kvm_exit -e kvm:kvm_entry -- /opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 || exit 34
sleep 2.5
kill -INT $TOP
wait $TOP || { cat /out/bpf.err >&2; exit 35; }
tracevisor stat --json /out/bpfrec > /out/bpfrec-stat.json || exit 36
# filters evaluated in the kernel: one reason; a latency no exit reaches
for f in io:"exit_reason == 0x7b" slow:"exit_reason == 0x72 && latency > 1s" fast:"exit_reason == 0x72 && latency >= 1us && vcpu_id == 0"; do
	tracevisor top --bpf --json --interval 2 --filter "${f#*:}" > /out/bpf-${f%%:*}.jsonl 2>> /out/bpf.err &
	TOP=$!
	for i in $(seq 100); do [ -s /out/bpf-${f%%:*}.jsonl ] && break; sleep 0.1; done
	/opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 > /dev/null || exit 37
	sleep 2.5
	kill -INT $TOP
	wait $TOP || { cat /out/bpf.err >&2; exit 38; }
done
# the tracepoint programs (the fallback where the kvm modules have no BTF):
# the same rows, the same filter in the kernel
for f in tp:"" tpfast:"exit_reason == 0x72 && latency >= 1us && vcpu_id == 0"; do
	TV_BPF_TRACEPOINT=1 TRACEVISOR_DEBUG=1 tracevisor top --bpf --json --interval 2 --filter "${f#*:}" > /out/bpf-${f%%:*}.jsonl 2> /out/bpf-${f%%:*}.err &
	TOP=$!
	for i in $(seq 100); do [ -s /out/bpf-${f%%:*}.jsonl ] && break; sleep 0.1; done
	/opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2 > /dev/null || exit 39
	sleep 2.5
	kill -INT $TOP
	wait $TOP || { cat /out/bpf-${f%%:*}.err >&2; exit 40; }
done
exit 0' svm
expect_rc 0 "top in the nested SVM host"

for s in vmm l2; do
	! grep -q tracevisor "$OUT/$s-instances" || fail "$s: a tracefs instance was left: $(cat "$OUT/$s-instances")"
	python3 "$REPO/tests/top_check.py" "$OUT/$s.jsonl" "$OUT/$s-stat.json" >&2 ||
		fail "$s: top's intervals do not sum to stat of the same recording"
done
python3 "$REPO/tests/top_check.py" "$OUT/l2-replay.jsonl" "$OUT/l2-stat.json" >&2 ||
	fail "top --replay of the L2 recording does not sum to its stat"
python3 - "$OUT/vmm.jsonl" "$OUT/vmm-stat.json" $((2 * (N + M))) $((2 * K)) <<'PY' || fail "top's rows of the test VMM"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
stat = json.load(open(sys.argv[2]))
want = {"io": int(sys.argv[3]), "cpuid": int(sys.argv[4])}
got = {r: sum(x["count"] for iv in ivs for x in iv["rows"] if x["reason"] == r) for r in want}
assert got == want, "io/cpuid counts %s, want %s" % (got, want)
lost = sum(iv["lost"] for iv in ivs)
assert lost == 0, "%d events lost" % lost
assert all(iv["mode"] == "exits" for iv in ivs if iv["rows"]), "not in kvm_exit/kvm_entry mode"
# a row whose every exit fell in one interval has stat's exact percentiles
key = lambda r: (r["vm"], r["vcpu"], r["reason"])
whole = {key(r): r for r in stat}
same = 0
for iv in ivs:
    for r in iv["rows"]:
        s = whole.get(key(r))
        if s and s["count"] == r["count"] and r["p50_ns"] is not None:
            assert (r["p50_ns"], r["p99_ns"]) == (s["p50_ns"], s["p99_ns"]), (r, s)
            same += 1
assert same > 0, "no row fell in one interval"
print("vmm: %d intervals, io %d, cpuid %d, 0 lost, %d rows with stat's p50/p99" %
      (len(ivs), got["io"], got["cpuid"], same))
PY
python3 - "$OUT/bpf.jsonl" "$OUT/bpfrec-stat.json" $((2 * (N + M))) $((2 * K)) <<'PY' || fail "top --bpf against stat of the same run"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
stat = json.load(open(sys.argv[2]))
assert all(iv["source"] == "bpf" for iv in ivs), "not the in-kernel aggregation"
vmm = lambda r: r["vm"].startswith("tv-testvmm[")
got, want = {}, {}
for iv in ivs:
    for r in filter(vmm, iv["rows"]):
        got[r["reason"]] = got.get(r["reason"], 0) + r["count"]
for r in filter(vmm, stat):
    want[r["reason"]] = want.get(r["reason"], 0) + r["count"]
assert got == want, "per reason: top --bpf %s, stat %s" % (got, want)
assert got.get("io") == int(sys.argv[3]) and got.get("cpuid") == int(sys.argv[4]), got
assert sum(iv["lost"] for iv in ivs) == 0, "lost"
# p50/p99 of the rows that fell in one interval, against stat's: both tracers
# run on the same tracepoints here, each inside the other's exit->entry
# window, which nested TCG makes microseconds long (measured: +2.4 us per
# exit): p50 15% + 3 us, p99 35% + 3 us.  The histogram's own error (3.1% at most) is checked
# by tests/unit/test_top_hist.c.
whole = {(r["vcpu"], r["reason"]): r for r in filter(vmm, stat)}
near = 0
for iv in ivs:
    for r in filter(vmm, iv["rows"]):
        s = whole.get((r["vcpu"], r["reason"]))
        if s and s["count"] == r["count"] and s["count"] >= 100 and r["p50_ns"]:
            # p99 of 1000 exits is their 10th largest: one slow exit more or
            # less under one of the two tracers moves it (seen: 17% and 30%);
            # of 200 it is the 2nd largest, one exit itself (CI 2026-11-28,
            # twice: cpuid, bpf 56 us, stat 15 us): p99 from 1000 exits on
            for k, tol in (("p50_ns", 0.15),) + ((("p99_ns", 0.35),) if s["count"] >= 1000 else ()):
                assert abs(r[k] - s[k]) <= tol * s[k] + 3000, "%s %s: bpf %d, stat %d" % (r["reason"], k, r[k], s[k])
            near += 1
assert near > 0, "no row of 100 exits or more in one interval"
print("top --bpf: %s per reason = stat of the same run, 0 lost, p50 within 15%%, p99 35%% (+ 3 us) on %d rows: %s" %
      (got, near, [(r["reason"], r["p50_ns"], whole[(r["vcpu"], r["reason"])]["p50_ns"]) for iv in ivs for r in filter(vmm, iv["rows"]) if (r["vcpu"], r["reason"]) in whole]))
PY
python3 - "$OUT" $((2 * (N + M))) $((2 * K)) <<'PY' || fail "top --bpf --filter"
import json, sys
out, io, cpuid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def reasons(name):
    got = {}
    for l in open("%s/bpf-%s.jsonl" % (out, name)):
        for r in json.loads(l)["rows"]:
            if r["vm"].startswith("tv-testvmm["):
                got[r["reason"]] = got.get(r["reason"], 0) + r["count"]
    return got
assert reasons("io") == {"io": io}, reasons("io")
assert reasons("slow") == {}, reasons("slow")
assert reasons("fast") == {"cpuid": cpuid}, reasons("fast")
print("top --bpf --filter in the kernel: io only %d; cpuid > 1 s none; cpuid >= 1 us on vCPU 0 %d" % (io, cpuid))
# which programs ran: tp_btf by default here (L1's kvm modules have BTF),
# the tracepoint ones when asked; the same counts either way
assert "exits aggregated by tp_btf programs" in open(out + "/bpf.err").read(), "not the tp_btf programs"
for name in ("tp", "tpfast"):
    assert "exits aggregated by tracepoint programs" in open("%s/bpf-%s.err" % (out, name)).read(), name
tp = reasons("tp")
assert tp.get("io") == io and tp.get("cpuid") == cpuid, tp
assert sum(json.loads(l)["lost"] for l in open(out + "/bpf-tp.jsonl")) == 0, "tracepoint programs: lost"
assert reasons("tpfast") == {"cpuid": cpuid}, reasons("tpfast")
print("tracepoint programs: io %d, cpuid %d, 0 lost; filtered cpuid %d" % (tp["io"], tp["cpuid"], cpuid))
PY
n=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["rows"]))' "$OUT/l2.jsonl")
[ "$n" -ge 2 ] || fail "L2 boot: only $n intervals with exits"
echo "PASS: top live = stat of its own recording (test VMM exact, L2 boot over $n intervals), replay too" >&2
