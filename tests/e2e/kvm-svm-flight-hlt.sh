#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# exit-latency triggers leave halts out (a vCPU in hlt waits for an
# interrupt: a wait, not a stall) unless reason=hlt names them, on a real
# SVM KVM host (the lab's nested L1): an idle L2 (its agent only: its vCPU
# halts most of the time, hlt exits of 100-200 ms between its ticks), L1
# armed with both rules for IDLE_S seconds (default 20):
#   --trigger 'exit-latency>50ms' --trigger 'exit-latency>50ms,reason=hlt'
#  - the reason=hlt rule fires (at least once): its snapshots' exits are
#    hlt, and their stat has that hlt exit (>= 50 ms);
#  - every snapshot of the plain rule is of an exit other than hlt (under
#    TCG on a loaded host, L1 itself stands still now and then: msr, npf or
#    interrupt exits of 50 ms and more are real there), so the plain rule
#    left out the hlt exits the other rule caught.
# (A SIGSTOP of QEMU does not give a long hlt exit: the signal's kick ends
# the halt, and the stop is an interrupt exit: tests/e2e/kvm-svm-flight.sh.)
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
IDLE_S=${IDLE_S:-20}

L2_SCRIPT=$L2_AGENT_START'
l2_wait /out/done 9000
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/s --flight-recorder 16M --trigger "exit-latency>50ms" \
	--trigger "exit-latency>50ms,reason=hlt" --trigger-holdoff 1s --max-snapshots 100 \
	>/out/record.log 2>&1 &
REC=$!
n=0
until grep -q "recording to" /out/record.log || [ $n -gt 300 ]; do sleep 0.1; n=$((n + 1)); done
grep -q "recording to" /out/record.log || { cat /out/record.log; exit 30; }
sleep '$IDLE_S'
kill -INT $REC
wait $REC; echo $? > /out/record-rc
touch /tmp/l2/done
lab-guest --wait $QPID
for m in /out/s/snapshot-*/session.meta; do
	d=${m%/session.meta}
	tracevisor stat --json $d > $d.stat.json || exit 32
done
exit 0' flight-hlt LAB_TIMEOUT=$((IDLE_S + 600))
expect_rc 0 "L1 script"
cat "$OUT/record.log" >&2
[ "$(cat "$OUT/record-rc")" = 0 ] || fail "record exited $(cat "$OUT/record-rc")"
python3 - "$OUT/s" <<'PY' || fail "hlt left out of the plain rule"
import glob, json, os, sys
snaps = sorted(glob.glob(os.path.join(sys.argv[1], "snapshot-*", "session.meta")))
n = {"hlt": 0, "plain": 0}
reasons = []
for m in snaps:
    meta = dict(l.rstrip("\n").split("=", 1) for l in open(m) if "=" in l)
    if meta["trigger"] == "exit-latency>50ms,reason=hlt":
        assert meta["trigger_reason"] == "hlt", (m, meta["trigger_reason"])
        rows = json.load(open(os.path.dirname(m) + ".stat.json"))
        hlt = max((r["max_ns"] or 0) for r in rows if r["reason"] == "hlt")
        assert hlt >= 50 * 10**6, (m, "stat's longest hlt", hlt)
        n["hlt"] += 1
    else:
        assert meta["trigger"] == "exit-latency>50ms", (m, meta["trigger"])
        assert meta["trigger_reason"] != "hlt", (m, "the plain rule fired on a halt")
        n["plain"] += 1
        reasons.append(meta["trigger_reason"])
assert n["hlt"] >= 1, ("the reason=hlt rule never fired: no hlt exit of 50 ms in the idle L2?", snaps)
print("%d snapshot(s) of the reason=hlt rule, all hlt; %d of the plain rule, none hlt (%s)" %
      (n["hlt"], n["plain"], ", ".join(sorted(set(reasons))) or "-"))
PY
echo "PASS: hlt exits fire only the rule that names them" >&2
