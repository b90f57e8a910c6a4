#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 25, guests in the flight recorder, on a real SVM KVM host (the
# lab's nested L1) with a Linux L2 running the agent over vsock.  L1 runs
# `record --flight-recorder 16M --guest vsock:3,...,name:l2 --trigger
# 'guest=l2:sched:sched_process_exec,filter=filename ~ "*tvmark"'`:
#  - nothing of the guest's events on disk while armed (guest-l2/cpu*.raw
#    empty after seconds of a busy L2);
#  - L2 runs /tmp/tvmark once: its agent sees the exec in its trigger
#    instance, the host snapshots every layer: snapshot-1 has trigger=,
#    trigger_guest=l2, trigger_time=; host and guest-l2 in it, tvmark's events and
#    the guest's recent events read by report, L1's exits of L2's vCPU in
#    stat, the two synchronised (sync: 0 causality violations);
#  - L2 freezes its agent (SIGSTOP) and L1 asks a snapshot: written within
#    ~2 s, guest-l2 truncated (status, truncated=1, one warning line), the
#    host whole.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || skip "build/tracevisor-agent not built (make)"

L2_SCRIPT=$L2_AGENT_START'
cp /bin/true /tmp/tvmark
( while :; do dd if=/dev/zero of=/dev/null bs=4k count=200 2>/dev/null; sleep 0.05; done ) &
B=$!
l2_wait /out/fire 3000
/tmp/tvmark
l2_wait /out/freeze 3000
kill -STOP $AG
touch /out/frozen
l2_wait /out/thaw 3000
kill -CONT $AG
kill $B
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/s --flight-recorder 16M --guest vsock:3,pid:$QPID,name:l2 \
	--trigger "guest=l2:sched:sched_process_exec,filter=filename ~ \"*tvmark\"" \
	--trigger-holdoff 2s --post 200ms --sync-interval 0.5 >/out/record.log 2>&1 &
REC=$!
n=0
until grep -q "recording to" /out/record.log || [ $n -gt 600 ]; do sleep 0.1; n=$((n + 1)); done
grep -q "recording to" /out/record.log || { cat /out/record.log; exit 30; }
sleep 5
cat /out/s/guest-l2/cpu*.raw 2>/dev/null | wc -c > /out/bytes-before
ls /out/s/guest-l2 > /out/guest-files-before
touch /tmp/l2/fire
n=0
until [ -e /out/s/snapshot-1/session.meta ] || [ $n -gt 300 ]; do sleep 0.1; n=$((n + 1)); done
echo $((n * 100)) > /out/trigger-ms
sleep 1
touch /tmp/l2/freeze
n=0
until [ -e /tmp/l2/frozen ] || [ $n -gt 300 ]; do sleep 0.1; n=$((n + 1)); done
ms() { awk "{printf \"%d\\n\", \$1 * 1000}" /proc/uptime; }	# busybox date has no %N
t0=$(ms)
tracevisor snapshot /out/s > /out/snap2.path 2>/out/snap2.err
echo $? > /out/snap2.rc
echo $(($(ms) - t0)) > /out/snap2-ms
touch /tmp/l2/thaw
sleep 2
kill -INT $REC
wait $REC; echo $? > /out/record-rc
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/agent.log /out/ 2>/dev/null
ls /sys/kernel/tracing/instances > /out/instances-left
exit 0' guest-flight LAB_TIMEOUT=900
expect_rc 0 "L1 script"
cat "$OUT/record.log" >&2
S=$OUT/s
[ "$(cat "$OUT/bytes-before")" = 0 ] || fail "guest bytes on disk while armed: $(cat "$OUT/bytes-before")"
echo "ok: nothing of the guest on disk while armed (files: $(tr '\n' ' ' <"$OUT/guest-files-before"))" >&2
M=$S/snapshot-1/session.meta
[ -e "$M" ] || fail "no snapshot after L2 ran /tmp/tvmark"
cat "$M" >&2
grep -q '^trigger=guest=l2:sched:sched_process_exec,filter=filename ~ "\*tvmark"$' "$M" || fail "trigger key"
grep -qx "trigger_guest=l2" "$M" || fail "no trigger_guest=l2"
grep -q "^trigger_time=[1-9]" "$M" || fail "no trigger_time"
grep -qx "domains=host,guest-l2" "$M" || fail "snapshot 1's domains"
grep -qx "status=complete" "$S/snapshot-1/guest-l2/meta" || fail "guest-l2 in snapshot 1: $(grep status "$S/snapshot-1/guest-l2/meta")"
G1=$S/snapshot-1/guest-l2/meta
freeze=$(sed -n 's/^flight_freeze=//p' "$G1") gap=$(sed -n 's/^flight_gap_ns=//p' "$G1")
case $freeze in
snapshot-buffer) [ "$gap" = 0 ] || fail "the guest froze by a swap with a gap of $gap ns" ;;
stop-read-restart) [ "${gap:-0}" -gt 0 ] || fail "the guest stopped tracing with no gap measured" ;;
*) fail "the guest's flight_freeze='$freeze'" ;;
esac
echo "ok: the guest's ring frozen by $freeze (gap $gap ns, freeze $(sed -n 's/^flight_freeze_ns=//p' "$G1") ns)" >&2
"$TV" report "$S/snapshot-1" >"$T/r1" || fail "report of snapshot 1"
grep -q "^guest:l2 *tvmark-" "$T/r1" || fail "the triggering process (tvmark) not in the snapshot"
ge=$(grep -c "^guest:l2 " "$T/r1")
[ "$ge" -gt 1000 ] || fail "snapshot 1 holds $ge guest events"
"$TV" stat "$S/snapshot-1" >"$T/stat1" || fail "stat of snapshot 1"
grep -q "^l2\[" "$T/stat1" || { cat "$T/stat1" >&2; fail "stat of snapshot 1: no exits of VM l2"; }
"$TV" sync "$S/snapshot-1" >"$T/sync1" 2>&1 || fail "sync of snapshot 1: $(cat "$T/sync1")"
cat "$T/sync1" >&2
caus=$(awk '$1 == "guest-l2" {print $NF}' "$T/sync1")
case $caus in 0/[1-9]*) ;; *) fail "snapshot 1: guest-l2 causality '$caus' (want 0 violations)" ;; esac
"$TV" export --format perfetto -q -o "$T/p1" "$S/snapshot-1" || fail "export of snapshot 1"
echo "ok: guest trigger -> snapshot-1 in ~$(cat "$OUT/trigger-ms") ms: $ge guest events, tvmark's, L2's exits, sync $caus" >&2
[ "$(cat "$OUT/snap2.rc")" = 0 ] || fail "snapshot with a frozen agent: $(cat "$OUT/snap2.err")"
ms=$(cat "$OUT/snap2-ms")
[ "$ms" -ge 1900 ] && [ "$ms" -le 5000 ] || fail "snapshot with a frozen agent took $ms ms (want ~2000)"
G2=$S/snapshot-2/guest-l2/meta
grep -q "^status=truncated: no SNAP_END from the agent within 2 s" "$G2" || fail "frozen agent: $(grep status "$G2")"
grep -qx "truncated=1" "$G2" || fail "no truncated=1"
grep -qx "domains=host,guest-l2" "$S/snapshot-2/session.meta" || fail "snapshot 2's domains"
[ "$(grep -c "Guest l2: snapshot truncated" "$OUT/record.log")" = 1 ] || fail "the truncation not said in one line"
"$TV" report "$S/snapshot-2" >/dev/null || fail "report of snapshot 2"
echo "ok: frozen agent: snapshot-2 in $ms ms, guest-l2 truncated" >&2
rc=$(cat "$OUT/record-rc")
[ "$rc" = 0 ] || fail "record exited $rc"
grep -q '^tracevisor-' "$OUT/instances-left" && fail "tracefs instances left: $(cat "$OUT/instances-left")"
echo "PASS: guests in the flight recorder on nested SVM KVM: trigger in the guest, snapshot of every layer, frozen agent truncated" >&2
