#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# The flight recorder catches a stalled vCPU on a real SVM KVM host (the
# lab's nested L1): L1 records armed, `record --flight-recorder 64M
# --trigger 'exit-latency>200ms'`, while an L2 (its agent running) keeps
# its vCPU busy in a loop (no hlt: a halt is a wait, not a stall):
#  - NORMAL_S seconds (default 60) of normal running: 0 snapshots, unless
#    L1 itself stood still that long: a watchdog in L1 at real-time
#    priority (tv-timed: 10 ms sleeps) sees every gap of the machine; on a
#    loaded 2-core host the TCG machine is descheduled for 200-300 ms now
#    and then, during which the L2 really does not run: such a snapshot is
#    right, and said (the figures);
#  - then L2's QEMU stopped 1 s (SIGSTOP, SIGCONT): exactly one snapshot,
#    whose session.meta has the trigger (trigger=, trigger_vm= the L2,
#    trigger_vcpu=0, trigger_reason= not hlt, trigger_latency_ns >= 1 s),
#    whose stat shows that exit (max >= 1 s on the L2's vCPU 0), which holds
#    at least the 2 s before it from L1 and from the guest (`--guest`: L2's
#    agent keeps its ring in L2 and sends it for the snapshot; guest-l2
#    complete, not truncated: its ring of a minute, megabytes over vsock
#    under nested TCG with pauses of 2-3 s, within the guest's limits of
#    doc/agent-protocol.md; its meta and the agent's line are shown), the two
#    synchronised (sync: 0 causality violations), where report marks its
#    kvm_exit and `stat --by guest-task` names the L2 task the exit
#    interrupted (the busy loop's shell);
#  - seen in the kernel while open: trigger_seen_ns (exit -> seen) within
#    200 ms + 50 ms, well before the exit's end;
#  - Ctrl-C ends the recorder with no tracefs instance left.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
NORMAL_S=${NORMAL_S:-60}

# --post 1s: L2, stopped for a second, catches up before the snapshot asks
# its agent (at 100 ms its ring came after the host's 2 s now and then).
# The busy loop at nice 19: L2 has one vCPU, and at equal weight the
# agent answered the stall snapshot's request after the host's 2 s (the
# guest then written truncated, 0 bytes); the vCPU stays as busy.  L2's
# busybox has renice, not nice (with `nice -n 19 sh -c ...` there was no
# loop: L2 idle, the stop could land in a hlt exit, which the rule leaves
# out); the loop's nice value is checked below (/out/loop-nice).
L2_SCRIPT=$L2_AGENT_START'
sh -c "while :; do :; done" &
B=$!
renice 19 -p $B >/dev/null
sed "s/.*) //" /proc/$B/stat | cut -d" " -f17 > /out/loop-nice
l2_wait /out/done 9000
kill $B
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/s --flight-recorder 64M --trigger "exit-latency>200ms" \
	--guest vsock:3,pid:$QPID,name:l2 --sync-interval 0.5 --post 1s \
	--trigger-holdoff 1s --max-snapshots 100 >/out/record.log 2>&1 &
REC=$!
n=0
until grep -q "recording to" /out/record.log || [ $n -gt 300 ]; do sleep 0.1; n=$((n + 1)); done
grep -q "recording to" /out/record.log || { cat /out/record.log; exit 30; }
W=/opt/tracevisor/tests/tv-timed
CH=; chrt -f 50 true 2>/dev/null && CH="chrt -f 50"
$CH $W --calls $(('$NORMAL_S' * 100)) --sleep-us 10000 > /out/watchdog.txt 2>&1
ls -d /out/s/snapshot-* 2>/dev/null | wc -l > /out/snapshots-normal
echo "$CH" > /out/watchdog-prio
cp /out/record.log /out/record-normal.log
echo $QPID > /out/qpid
kill -STOP $QPID
sleep 1
kill -CONT $QPID
n=0
until [ -e /out/s/snapshot-$(($(cat /out/snapshots-normal) + 1))/session.meta ] || [ $n -gt 700 ]; do sleep 0.1; n=$((n + 1)); done
sleep 3
ls -d /out/s/snapshot-* 2>/dev/null | wc -l > /out/snapshots-after
kill -INT $REC
wait $REC; echo $? > /out/record-rc
ls /sys/kernel/tracing/instances > /out/instances-left
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/agent.log /out/agent-l2.log
cp /tmp/l2/loop-nice /out/loop-nice
N=$(ls -d /out/s/snapshot-* | wc -l)
[ -e /out/s/snapshot-$N/session.meta ] || exit 31
tracevisor stat --json /out/s/snapshot-$N > /out/stat.json || exit 32
tracevisor report /out/s/snapshot-$N > /out/report.txt || exit 33
tracevisor report --json /out/s/snapshot-$N | head -n 1 > /out/first.json
tracevisor report --json /out/s/snapshot-$N | grep -m 1 "\"domain\":\"guest:l2\"" > /out/first-guest.json
tracevisor report --json /out/s/snapshot-$N | grep -c "\"domain\":\"guest:l2\"" > /out/guest-events
tracevisor sync /out/s/snapshot-$N > /out/sync.txt 2>&1 || exit 34
tracevisor stat --by guest-task --json /out/s/snapshot-$N > /out/gt.json || exit 35
exit 0' flight LAB_TIMEOUT=$((NORMAL_S + 600))
expect_rc 0 "L1 script"
cat "$OUT/record.log" >&2
expect_count() {	# WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: $2, want $3"
	echo "ok: $1: $3" >&2
}
normal=$(cat "$OUT/snapshots-normal")
wd_max=$(sed -n 's/.* max_ns=\([0-9]*\).*/\1/p' "$OUT/watchdog.txt")
[ -n "$wd_max" ] || fail "the L1 watchdog did not run: $(cat "$OUT/watchdog.txt")"
echo "L1 watchdog ($(cat "$OUT/watchdog-prio" || true), 10 ms sleeps over ${NORMAL_S} s): longest $((wd_max / 1000000)) ms" >&2
if [ "$normal" != 0 ]; then
	# a snapshot in normal running: only when L1 itself stood still past the limit
	[ "$wd_max" -ge 200000000 ] ||
		fail "$normal snapshot(s) in ${NORMAL_S} s of normal running while L1 never stood still 200 ms (longest gap $((wd_max / 1000000)) ms)"
	echo "note: $normal snapshot(s) in ${NORMAL_S} s of normal running, all while L1 itself stood still (host load $(cut -d' ' -f1 /proc/loadavg)): $(grep -c 'trigger' "$OUT/record-normal.log") trigger lines" >&2
	grep trigger_latency_ns "$OUT"/s/snapshot-1/session.meta >&2
else
	echo "ok: snapshots in ${NORMAL_S} s of normal running: 0" >&2
fi
expect_count "snapshots after the 1 s SIGSTOP" "$(cat "$OUT/snapshots-after")" $((normal + 1))
expect_count "record's exit status" "$(cat "$OUT/record-rc")" 0
grep -q '^tracevisor-' "$OUT/instances-left" && fail "tracefs instances left: $(cat "$OUT/instances-left")"
N=$((normal + 1))
M=$OUT/s/snapshot-$N/session.meta
cat "$M" "$OUT/s/snapshot-$N/host/meta" >&2
# L1's /tmp/l2 is L2's /out
[ "$(cat "$OUT/loop-nice" 2>/dev/null)" = 19 ] || fail "L2's busy loop not at nice 19: '$(cat "$OUT/loop-nice" 2>/dev/null)'"
GM=$OUT/s/snapshot-$N/guest-l2/meta
[ -e "$GM" ] || fail "the stall's snapshot has no guest-l2 (record's log above)"
cat "$GM" >&2
grep 'Snapshot' "$OUT/agent-l2.log" >&2 || true
grep -qx 'status=complete' "$GM" || fail "the stall's snapshot: guest-l2 $(grep '^status=' "$GM")"
gkey() { sed -n "s/^$1=//p" "$GM"; }
echo "guest-l2: complete, $(gkey bytes_total) bytes, $(cat "$OUT/guest-events") events, received in $(($(gkey snapshot_receive_ns) / 1000000)) ms (longest wait for its data $(($(gkey snapshot_max_data_gap_ns) / 1000000)) ms)" >&2
cat "$OUT/sync.txt" >&2
caus=$(awk '$1 == "guest-l2" {print $NF}' "$OUT/sync.txt")
case $caus in 0/[1-9]*) ;; *) fail "the stall's snapshot: guest-l2 causality '$caus' (want 0 violations)" ;; esac
echo "guest-l2 sync: $(awk '$1 == "guest-l2" {print $2 ", bound " $6 " ns, " $7 " probes, causality " $NF}' "$OUT/sync.txt")" >&2
python3 - "$M" "$OUT/s/snapshot-$N/host/meta" "$OUT/stat.json" "$OUT/report.txt" "$OUT/first.json" "$(cat "$OUT/qpid")" \
	"$OUT/first-guest.json" "$OUT/gt.json" <<'PY' || fail "the snapshot of the stall"
import json, re, sys
meta = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if "=" in l)
host = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[2]) if "=" in l)
rows, report, qpid = json.load(open(sys.argv[3])), open(sys.argv[4]).read().split("\n"), int(sys.argv[6])
first = json.loads(open(sys.argv[5]).read())
assert meta["trigger"] == "exit-latency>200ms", meta
assert int(meta["trigger_pid"]) == qpid, ("trigger_pid", meta["trigger_pid"], qpid)
assert meta["trigger_vcpu"] == "0", meta
assert meta["trigger_reason"] != "hlt", meta
lat = int(meta["trigger_latency_ns"])
assert lat >= 10**9, ("trigger_latency_ns", lat)
seen = int(meta["trigger_seen_ns"])
assert 200 * 10**6 <= seen <= 250 * 10**6, ("seen after", seen)
# stat: that exit, >= 1 s, on the L2 VM's vCPU 0
mine = [r for r in rows if r["vm"].endswith("[%d]" % qpid) and str(r["vcpu"]) == "0" and (r.get("max_ns") or 0) >= 10**9]
assert mine, ("no exit of 1 s or more in stat", [(r["vm"], r["vcpu"], r["reason"], r["max_ns"]) for r in rows][:10])
assert any(r["reason"] == meta["trigger_reason"] for r in mine), (meta["trigger_reason"], mine)
# at least the 2 s before it
t = int(meta["trigger_time"])
assert first["ts"] <= t - 2 * 10**9, ("the snapshot starts", (t - first["ts"]) / 1e9, "s before the trigger")
# and from the guest (its ring, its times on the host's clock by the session's sync)
guest = json.loads(open(sys.argv[7]).read())
assert guest["ts"] <= t - 2 * 10**9, ("the guest's part starts", (t - guest["ts"]) / 1e9, "s before the trigger")
# the L2 task the stalled exit interrupted
gt = [r for r in json.load(open(sys.argv[8])) if r["vm"].endswith("[%d]" % qpid) and str(r["vcpu"]) == "0"
      and (r.get("max_ns") or 0) >= 10**9]
assert gt and all(r["guest_task"] not in ("?", "") for r in gt), ("stat --by guest-task: the stalled exit's task", gt)
# report marks its kvm_exit
marks = [i for i, l in enumerate(report) if l.startswith("  ^ trigger: exit-latency>200ms")]
assert len(marks) == 1, ("marks", len(marks))
assert "kvm:kvm_exit" in report[marks[0] - 1], report[marks[0] - 1]
print("stall: %s vcpu %s reason %s, %.3f s (stat max %.3f s), seen open after %.1f ms; snapshot from %.1f s before (guest %.1f s); frozen by %s in %.1f ms; interrupted L2 task %s" %
      (meta["trigger_vm"], meta["trigger_vcpu"], meta["trigger_reason"], lat / 1e9, max(r["max_ns"] for r in mine) / 1e9,
       seen / 1e6, (t - first["ts"]) / 1e9, (t - guest["ts"]) / 1e9, host.get("flight_freeze"), int(host["flight_freeze_ns"]) / 1e6,
       ", ".join(sorted({"%s[%s]" % (r["guest_task"], r.get("guest_pid")) for r in gt}))))
PY
echo "PASS: the flight recorder caught the 1 s stall once; $normal snapshot(s) in ${NORMAL_S} s of normal running (L1's longest gap $((wd_max / 1000000)) ms)" >&2
