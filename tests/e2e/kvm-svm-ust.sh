#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Application tracing in a real guest (#13): in the lab's nested SVM L1,
# an L2 Linux with 2 vCPUs runs ust-demo (libtracevisor-ust, T threads x N events,
# blocking mode, rdtsc time stamps) while its tracevisor-agent streams the
# guest kernel's scheduler events and, through the registration socket,
# ust-demo's buffers; L1 records its kvm_exit/kvm_entry with
# `record --guest ... --ust 'demo:*'` in x86-tsc, and `tracevisor sync`
# maps L2 (and so its traced process) exactly through the TSC offsets.
# Checks, on the one synchronised timeline:
#  - every (thread, seq) of ust-demo once and in order, domain guest:l2,
#    from both of L2's CPUs (the enable reaches the other vCPU at once:
#    guest/ust/ust_registry.c, ust_repatch_all);
#  - each ust-demo thread is switched in by L2's scheduler (sched_switch
#    next_pid = its tid) before its first event, and L1's kvm_exit events
#    fall between its first and last event (the VM exited while it ran);
#  - every demo:tick falls while its vCPU is in guest mode by L1's
#    kvm_entry/kvm_exit (sync's vCPU check: 0 violations of N x T checks);
#  - stat counts demo:tick exactly; babeltrace2 reads the CTF export with
#    report's count.
# Then the same L2 under `record --flight-recorder 1M --guest ... --ust`
# (issue 25 point 1): ust-steps (one thread) pauses after step 1 and step 2;
# nothing of its events in L1's ust-guest-l2-PID/ while armed; a snapshot
# at the first pause holds, in snapshot-1/ust-guest-l2-PID/ (status
# snapshot), a gap-free tail ending exactly at that pause; Ctrl-C at the
# second writes the last tail into the session (status complete).
# tv-timeout: 2400 (tests/run-tests: two lab runs, each booted again when L1 crashes)
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || fail "build/tracevisor-agent not built (make)"
[ -x "$REPO/build/examples/ust-demo" ] || fail "build/examples/ust-demo not built (make)"
N=20000 THREADS=2

L2_SCRIPT=$L2_AGENT_START'
l2_wait /out/go
w=0
while [ ! -S /run/tracevisor/ust.sock ] && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
echo "cpus $(nproc)" >/out/cpus.txt
TRACEVISOR_UST="demo:*" TRACEVISOR_UST_MODE=blocking TRACEVISOR_UST_CLOCK=x86-tsc \
	/opt/tracevisor/examples/ust-demo '$N' '$THREADS' >/out/demo.txt 2>&1
echo "status $?" >>/out/demo.txt
touch /out/demo.done
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT" 500 2)"'
tracevisor record -o /out/s --clock x86-tsc -e kvm:kvm_exit -e kvm:kvm_entry \
	--guest vsock:3,pid:$QPID,name:l2 --guest-events sched:sched_switch --ust "demo:*" \
	-- sh -c "sleep 1; touch /tmp/l2/go;
	n=0; while [ ! -e /tmp/l2/demo.done ] && [ \$n -lt 1500 ]; do sleep 0.2; n=\$((n + 1)); done; sleep 1" \
	>/out/record.log 2>&1 || exit 22
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/demo.txt /tmp/l2/agent.log /tmp/l2/cpus.txt /out/ 2>/dev/null
tracevisor sync /out/s >/out/sync.txt 2>&1 || exit 23
exit 0' ust LAB_TIMEOUT=1000
expect_rc 0 "L1 script"
cat "$OUT/record.log" "$OUT/sync.txt" >&2
grep -qx "cpus 2" "$OUT/cpus.txt" || fail "L2 did not have 2 vCPUs: $(cat "$OUT/cpus.txt")"
grep -q "status 0" "$OUT/demo.txt" || fail "ust-demo in L2: $(cat "$OUT/demo.txt")"
S=$OUT/s
grep -q "ust-guest-l2-" "$S/session.meta" || fail "no traced process of L2 in the session: $(cat "$OUT/agent.log")"
"$TV" report --json "$S" >"$T/report.json" 2>"$T/report.err" || fail "report: $(cat "$T/report.err")"
python3 - "$T/report.json" $N $THREADS <<'PY' || fail "timeline"
import json, sys
n, threads = int(sys.argv[2]), int(sys.argv[3])
seqs, first, last, tid_of, cpus = {}, {}, {}, {}, {}
switched_in = {}	# tid -> earliest ts the L2 scheduler switched it in
exits = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "demo:tick":
        assert e["domain"] == "guest:l2", e
        t = e["fields"]["thread"]
        seqs.setdefault(t, []).append(e["fields"]["seq"])
        first.setdefault(t, e["ts"])
        last[t] = e["ts"]
        tid_of[t] = e["pid"]
        cpus[e["cpu"]] = cpus.get(e["cpu"], 0) + 1
    elif e["event"] == "sched:sched_switch" and e["domain"] == "guest:l2":
        switched_in.setdefault(e["fields"]["next_pid"], e["ts"])
    elif e["event"] == "kvm:kvm_exit" and e["domain"] == "host":
        exits.append(e["ts"])
assert sorted(seqs) == list(range(threads)), sorted(seqs)
for t, s in seqs.items():
    assert s == list(range(n)), ("thread", t, len(s))
for t in seqs:
    tid = tid_of[t]
    assert tid in switched_in and switched_in[tid] <= first[t], \
        ("thread %d (tid %d) ran before L2 switched it in" % (t, tid), switched_in.get(tid), first[t])
lo, hi = min(first.values()), max(last.values())
during = sum(1 for x in exits if lo <= x <= hi)
assert during > 0, "no L1 kvm_exit while ust-demo ran (%d exits in all)" % len(exits)
assert len(cpus) == 2, ("ust-demo's events not from both L2 vCPUs", cpus)
print("ok: demo:tick per L2 CPU: %s" % sorted(cpus.items()))
print("ok: %d x %d demo:tick in order in guest:l2; each thread switched in by L2 before its first event; "
      "%d of L1's %d kvm_exit while it ran (%.3f ms)" % (threads, n, during, len(exits), (hi - lo) / 1e6))
PY
grep -q "^guest-l2 .* exact" "$OUT/sync.txt" && grep -q "^ust-guest-l2-.* exact" "$OUT/sync.txt" || fail "L2 not synchronised exactly: $(cat "$OUT/sync.txt")"
# every ust-demo event fell while its vCPU (buffer N = guest CPU N) was in guest mode
vc=$(awk '$1 ~ /^ust-guest-l2-[0-9.]+$/ {print $NF}' "$OUT/sync.txt")
[ "$vc" = "0/$((N * THREADS))" ] || fail "ust-demo events against L1's kvm_entry/kvm_exit of their vCPU: $vc, want 0/$((N * THREADS))"
echo "ok: vCPU check of the application's events: $vc violations/checks" >&2
"$TV" stat --json "$S" >"$T/stat.json" || fail "stat"
got=$(python3 -c "import json,sys; print(sum(r['count'] for r in json.load(open(sys.argv[1])) if r.get('mode')=='ust' and r['reason']=='demo:tick'))" "$T/stat.json")
[ "$got" = $((N * THREADS)) ] || fail "stat demo:tick: $got, want $((N * THREADS))"
echo "ok: stat demo:tick = $got" >&2
"$TV" export --format ctf -q -o "$T/ctf" "$S" || fail "export ctf"
command -v babeltrace2 >/dev/null || fail "babeltrace2 not installed"
bt=$(babeltrace2 "$T/ctf" | grep -c ' demo:tick:')
rp=$(grep -c '"event":"demo:tick"' "$T/report.json")
[ "$bt" = "$rp" ] || fail "babeltrace2 has $bt demo:tick, report $rp"
echo "ok: babeltrace2 reads $bt demo:tick = report" >&2
echo "ok: application, guest kernel and L1 kvm events in one synchronised timeline" >&2

# The guest's traced process in the flight recorder
FN=20000
L2_FLIGHT=$L2_AGENT_START'
l2_wait /out/go
w=0
while [ ! -S /run/tracevisor/ust.sock ] && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
mkdir -p /tmp/w
/opt/tracevisor/examples/ust-steps '$FN' 2 1 /tmp/w >/out/steps.txt 2>&1 &
P=$!
echo $P >/out/steps.pid
l2_wait /tmp/w/step1
touch /out/step1
l2_wait /out/go1
touch /tmp/w/go1
l2_wait /tmp/w/step2
touch /out/step2
l2_wait /out/done
touch /tmp/w/go2
wait $P
echo "status $?" >>/out/steps.txt
l2_finish
exit 0'
run_lab kvm "$(l1_start_l2 "$L2_FLIGHT" 400 2)"'
tracevisor record -o /out/f --flight-recorder 1M --guest vsock:3,pid:$QPID,name:l2 \
	--guest-events sched:sched_switch --ust "demo:*" >/out/record.log 2>&1 &
REC=$!
n=0
until grep -q "recording to" /out/record.log || [ $n -gt 600 ]; do sleep 0.1; n=$((n + 1)); done
touch /tmp/l2/go
n=0
until [ -e /tmp/l2/step1 ] || [ $n -gt 1200 ]; do sleep 0.1; n=$((n + 1)); done
[ -e /tmp/l2/step1 ] || { cat /out/record.log; exit 30; }
cat /out/f/ust-guest-l2-*/cpu*.ust 2>/dev/null | wc -c >/out/bytes-before
ls /out/f >/out/files-before
tracevisor snapshot /out/f >/out/snap.path 2>/out/snap.err || exit 31
touch /tmp/l2/go1
n=0
until [ -e /tmp/l2/step2 ] || [ $n -gt 1200 ]; do sleep 0.1; n=$((n + 1)); done
[ -e /tmp/l2/step2 ] || exit 32
kill -INT $REC
wait $REC || exit 33
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/steps.txt /tmp/l2/steps.pid /tmp/l2/agent.log /out/ 2>/dev/null
exit 0' ust-flight LAB_TIMEOUT=900
expect_rc 0 "L1 script (flight)"
cat "$OUT/record.log" >&2
grep -q "status 0" "$OUT/steps.txt" || fail "ust-steps in L2: $(cat "$OUT/steps.txt")"
PID=$(cat "$OUT/steps.pid")
[ "$(cat "$OUT/bytes-before")" = 0 ] || fail "the guest's process streamed while armed: $(cat "$OUT/bytes-before") bytes"
grep -qx "ust-guest-l2-$PID" "$OUT/files-before" || fail "no ust-guest-l2-$PID while armed: $(cat "$OUT/files-before")"
SNAP=$OUT/f/snapshot-1
grep -q "^domains=.*ust-guest-l2-$PID" "$SNAP/session.meta" || fail "snapshot-1's domains: $(cat "$SNAP/session.meta")"
grep -qx "status=snapshot" "$SNAP/ust-guest-l2-$PID/meta" || fail "snapshot-1's process: $(grep status "$SNAP/ust-guest-l2-$PID/meta")"
tail_check() {	# REPORT END: guest:l2's demo:tick gap-free, ending at END-1
	python3 - "$@" <<'PY'
import re, sys
end = int(sys.argv[2])
s = [int(m.group(1)) for m in (re.search(r"^guest:l2 .*demo:tick thread=0 seq=(\d+)", l) for l in open(sys.argv[1])) if m]
assert s, "no guest:l2 demo:tick"
assert s == list(range(s[0], s[0] + len(s))), "gap"
assert s[-1] == end - 1, ("ends at", s[-1])
print(len(s))
PY
}
"$TV" report "$SNAP" >"$T/f1" || fail "report of snapshot-1"
n=$(tail_check "$T/f1" $FN) || fail "snapshot-1: not a gap-free tail ending at seq $((FN - 1))"
echo "ok: flight: snapshot-1 holds the guest process's tail, $n events up to seq $((FN - 1)); nothing streamed while armed" >&2
grep -qx "status=complete" "$OUT/f/ust-guest-l2-$PID/meta" || fail "the session's process: $(grep status "$OUT/f/ust-guest-l2-$PID/meta")"
"$TV" report "$OUT/f" >"$T/f2" || fail "report of the flight session"
n=$(tail_check "$T/f2" $((2 * FN))) || fail "the session's last tail is not gap-free up to seq $((2 * FN - 1))"
echo "ok: flight: Ctrl-C wrote the last tail, $n events up to seq $((2 * FN - 1)), complete" >&2
echo "PASS: application, guest kernel and L1 kvm events in one synchronised timeline; the guest's process in the flight recorder" >&2
