#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# tv-lab: own-machine: --xen-pages 1024: Xen's trace buffer size is fixed until it reboots (a shared Xen has 32 pages from boot: 1.5M records lost here, the stall's among them)
# Issue #25 point 3 on Xen: the black box catches a stalled domU with every
# layer.  On the patched Xen (records carry the TSC), dom0 records armed,
# `record --xen --flight-recorder 64M --guest xen:d2 --trigger
# 'exit-latency>200ms'`, while the PVH domU d2 (and the PV d1) run their
# agents and a fork/exec workload (XEN_DOMUS_START, as xen-domu-sync), d2
# also spinning (so that the pause stops a running vCPU, not one in hlt):
#  - QUIET_S seconds (default 10) of normal running: 0 snapshots (the
#    60 s of the issue are kvm-svm-flight's; here the guest's ring must
#    cross the PV console, tens of KB/s under TCG, in the snapshot's
#    time, so it holds seconds of the guest's scheduling only, ~100 KB:
#    with the agent's default events 1.5 MB took over 30 s);
#  - then `xl pause d2` for 1 s (its vCPU exits and waits offline, the Xen
#    side of stopping a VMM): exactly one snapshot, whose session.meta
#    names d2 and an exit of >= 1 s (not hlt), holding Xen's records, dom0's
#    kernel and d2's own ring (kept by its agent in the domU, sent on the
#    snapshot: status=complete), the guest's events from at least 2 s
#    before the trigger;
#  - the snapshot aligns by itself (its own probes): sync puts d2 via xen
#    with 0 causality violations, and `stat --by guest-task` names the d2
#    task the stalled exit interrupted;
#  - Ctrl-C ends the recorder (the final rings as the session), d2 ends
#    (its agent's one session); d1, not recorded, is destroyed.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"
patched_xen
QUIET_S=${QUIET_S:-10}

run_lab xen "$XEN_DOMUS_START"'
xen_domus_start 0
xl domid d2 > /out/d2.domid
# d2 running when paused: idle, its vCPU waits in a hlt exit, which the rule leaves out
touch /out/d2/busy
TRACEVISOR_DEBUG=1 $TV record --xen --xen-events sched,hvm,guest --xen-pages 1024 -e sched:sched_switch --flight-recorder 64M \
	--trigger "exit-latency>200ms" --trigger-holdoff 1s --max-snapshots 10 \
	--guest xen:d2 --guest-events sched:sched_switch -o /tmp/fl >/out/record.out 2>/out/record.err & P=$!
n=0
until grep -q "recording to" /out/record.err || [ $n -gt 300 ]; do sleep 0.1; n=$((n + 1)); done
grep -q "recording to" /out/record.err || { kill -INT $P; exit 30; }
sleep '"$QUIET_S"'
ls /tmp/fl > /out/quiet.ls
xl pause d2; sleep 1; xl unpause d2
# the trigger within 30 s; then d2'"'"'s ring crosses the PV console (the
# recorder allows 60 s at most)
n=0
until grep -q "trigger fired" /out/record.err || [ $n -gt 300 ]; do sleep 0.1; n=$((n + 1)); done
n=0
while [ ! -f /tmp/fl/snapshot-1/session.meta ] && [ $n -lt 900 ]; do sleep 0.1; n=$((n + 1)); done
sleep 3
ls -d /tmp/fl/snapshot-* 2>/dev/null | wc -l > /out/snapshots-after
kill -INT $P; wait $P; echo $? > /out/record-rc
# d1 (not recorded) has its agent waiting for a session: not ours to wait for
xl destroy d1; echo 0 > /out/d1-rc
lab-domu --wait d2; echo $? > /out/d2-rc
tar -C /tmp -cf /out/fl.tar fl || exit 23
exit 0' flight-guest LAB_XEN="$XEN_BIN" LAB_TIMEOUT=$((QUIET_S + 900))
expect_rc 0 "dom0 script"
tar -C "$OUT" -xf "$OUT/fl.tar" || fail "cannot unpack the dom0 session"
cat "$OUT/record.err" >&2
[ "$(cat "$OUT/record-rc")" = 0 ] || fail "record exited $(cat "$OUT/record-rc"): $(tail -n 3 "$OUT/record.err")"
grep -q snapshot "$OUT/quiet.ls" && fail "a snapshot in $QUIET_S s of normal running: $(tr '\n' ' ' <"$OUT/quiet.ls")"
echo "ok: snapshots in $QUIET_S s of normal running: 0" >&2
grep -q "trigger fired" "$OUT/record.err" || fail "no trigger fired after the 1 s pause"
[ "$(cat "$OUT/snapshots-after")" = 1 ] || fail "snapshots after the 1 s pause: $(cat "$OUT/snapshots-after"), want 1"
S=$OUT/fl/snapshot-1 DOMID=$(cat "$OUT/d2.domid")
cat "$S/session.meta" >&2
sm() { sed -n "s/^$1=//p" "$S/session.meta"; }
[ "$(sm trigger)" = "exit-latency>200ms" ] || fail "trigger=$(sm trigger)"
[ "$(sm trigger_vm)" = d2 ] && [ "$(sm trigger_domid)" = "$DOMID" ] && [ "$(sm trigger_vcpu)" = 0 ] ||
	fail "trigger_vm=$(sm trigger_vm) trigger_domid=$(sm trigger_domid) trigger_vcpu=$(sm trigger_vcpu)"
[ "$(sm trigger_reason)" != hlt ] || fail "a hlt exit fired a rule without reason=hlt"
lat=$(sm trigger_latency_ns)
[ "${lat:-0}" -ge 1000000000 ] || fail "trigger_latency_ns=$lat (>= 1 s expected)"
grep -q "^domains=.*guest-d2" "$S/session.meta" || fail "the snapshot has no guest-d2: $(grep domains= "$S/session.meta")"
grep -qx "status=complete" "$S/guest-d2/meta" || fail "guest-d2 in the snapshot: $(grep status "$S/guest-d2/meta")"

"$TV" sync "$S" >"$T/sync.txt" 2>&1 || fail "sync of the snapshot: $(tail -n 3 "$T/sync.txt")"
cat "$T/sync.txt" >&2
"$TV" sync --json --dry-run "$S" >"$T/sync.json" || fail "sync --json of the snapshot"
"$TV" stat --json "$S" >"$T/stat.json" || fail "stat of the snapshot"
"$TV" stat --by guest-task --json "$S" >"$T/task.json" || fail "stat --by guest-task of the snapshot"
"$TV" report --json "$S" >"$T/report.json" || fail "report of the snapshot"
python3 - "$T/sync.json" "$T/stat.json" "$T/task.json" "$T/report.json" "d$DOMID" "$(sm trigger_reason)" <<'PY' || fail "the stall's snapshot (above)"
import json, sys
sync = {d["domain"]: d for d in json.load(open(sys.argv[1]))["domains"]}
stat, task = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
vm, reason = sys.argv[5], "vmexit:" + sys.argv[6]
g = sync["guest-d2"]
print("guest-d2: %s via %s, bound %s ns, causality %d/%d" % (g["method"], g["via"], g["bound_ns"],
      g["causality_violations"], g["pairs_checked"]))
assert g["method"] == "hull" and g["via"] == "xen", g["message"]
assert g["pairs_checked"] > 0 and g["causality_violations"] == 0, g
rows = [r for r in stat if r.get("mode") == "xen" and r["vm"] == vm and r["reason"] == reason]
assert rows and max(r["max_ns"] or 0 for r in rows) >= 10**9, ("no 1 s exit in stat", rows)
stalled = [r for r in task if r.get("mode") == "xen" and r["vm"] == vm and r["reason"] == reason
           and (r["max_ns"] or 0) >= 10**9]
assert stalled and stalled[0]["guest_task"] not in ("", "?"), ("the stalled exit's guest task", stalled)
mark = first_guest = None
for line in open(sys.argv[4]):
    e = json.loads(line)
    if first_guest is None and e["domain"] == "guest:d2":
        first_guest = e["ts"]
    if "trigger" in e:
        mark = e["ts"]
assert mark is not None, "report marks no triggering event"
assert first_guest is not None and first_guest <= mark - 2 * 10**9, ("guest from", first_guest, "trigger", mark)
print("stall: %s %s, %.3f s; guest task %s[%s]; d2's ring from %.1f s before the trigger" % (
      vm, reason, max(r["max_ns"] for r in rows) / 1e9, stalled[0]["guest_task"], stalled[0]["guest_pid"],
      (mark - first_guest) / 1e9))
PY
for d in d1 d2; do
	[ "$(cat "$OUT/$d-rc")" = 0 ] || fail "domU $d ended with $(cat "$OUT/$d-rc") (agent: $(tail -n 3 "$OUT/$d/agent.err" 2>/dev/null))"
done
echo "PASS: Xen flight recorder with d2's ring: 0 snapshots in $QUIET_S s, one for the 1 s pause (exit $lat ns), synchronised via Xen, the guest task named" >&2
