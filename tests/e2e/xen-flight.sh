#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# Xen in the flight recorder (issue #25): in a real dom0 (lab `xen`) with a
# PVH domU d1 (lab-domu) that works and idles in turns, `record --xen -e sched:sched_switch --flight-recorder 512K`
# keeps Xen's last records per pCPU (and dom0's kernel) in memory:
#   - nothing on disk before the snapshot (no cpu* stream file at all);
#   - `tracevisor snapshot DIR` writes snapshot-1/ with host and xen, each
#     pCPU's file within its ring (the ring wrapped: older records pushed
#     out), d1's exits in it, read by report, stat, sync and export;
#   - Ctrl-C writes the last rings as the session itself;
# `--trigger 'exit-latency>5ms,reason=hlt' --max-snapshots 1` fires on
# a real hlt exit of d1 (the idle domU waits in hlt): exactly one snapshot,
# its session.meta naming d1, vCPU 0, hlt and a latency past 5 ms, the
# exit's VMEXIT record in the snapshot at trigger_time (report marks it).
# Then the issue's rule `exit-latency>200ms` (hlt left out) with d1 busy:
# no snapshot in 60 s of normal running (QUIET_S), then `xl pause d1` for 1 s (its vCPU exits and
# waits offline: the Xen side of stopping a VMM) gives exactly one, whose
# exit lasts >= 1 s in session.meta and in stat.
# The domU ends (its script told to stop) and the recorders are gone at the
# end (xl list, their pids).
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
command -v python3 >/dev/null || skip "python3 missing"
QUIET_S=${QUIET_S:-60}

run_lab xen '
TV=/opt/tracevisor/tracevisor
# the domU: work (exits of every kind), then idle (hlt), in turns, until
# /out/stop; without the idle once /out/busy is there
printf "%s\n" "echo up >/out/up" \
	"while [ ! -e /out/stop ]; do i=0; while [ \$i -lt 100 ]; do /bin/true; i=\$((i+1)); done; [ -e /out/busy ] || sleep 1; done" >/tmp/domu.sh
mkdir -p /out/d1
lab-domu --name d1 --timeout 600 --background /tmp/domu.sh /out/d1 >/dev/null || exit 30
n=0
while [ ! -e /out/d1/up ] && [ $n -lt 300 ]; do sleep 1; n=$((n+1)); done
[ -e /out/d1/up ] || { xl destroy d1; exit 31; }
xl domid d1 >/out/d1.domid
# on demand: nothing on disk until the snapshot
$TV record --xen -e sched:sched_switch --flight-recorder 512K -o /tmp/fr 2>/out/fr.err & P=$!
sleep 6
find /tmp/fr -type f -name "cpu*" >/out/fr.before
du -sk /tmp/fr >>/out/fr.before.du
$TV snapshot /tmp/fr >/out/fr.snapshot 2>&1; echo $? >/out/fr.snapshot.rc
sleep 2
kill -INT $P; wait $P; echo $? >/out/fr.rc; PIDS=$P
# a trigger on a real exit: the idle domU waits in hlt
$TV record --xen --flight-recorder 512K --trigger "exit-latency>5ms,reason=hlt" --max-snapshots 1 \
	-o /tmp/tr 2>/out/tr.err & P=$!
n=0
while [ ! -f /tmp/tr/snapshot-1/session.meta ] && [ $n -lt 60 ]; do sleep 1; n=$((n+1)); done
sleep 3
kill -INT $P; wait $P; echo $? >/out/tr.rc; PIDS="$PIDS $P"
# a stall: d1 busy, QUIET_S of normal running, then paused 1 s in an exit
# (xl pause: the vCPU exits and goes offline; runnable again at unpause)
touch /out/d1/busy
sleep 2
$TV record --xen --flight-recorder 512K --trigger "exit-latency>200ms" -o /tmp/st 2>/out/st.err & P=$!
sleep '"$QUIET_S"'
ls /tmp/st >/out/st.quiet
xl pause d1; sleep 1; xl unpause d1
n=0
while [ ! -f /tmp/st/snapshot-1/session.meta ] && [ $n -lt 30 ]; do sleep 1; n=$((n+1)); done
sleep 3
kill -INT $P; wait $P; echo $? >/out/st.rc; PIDS="$PIDS $P"
touch /out/d1/stop
timeout 120 lab-domu --wait d1; echo $? >/out/d1.rc
xl list >/out/xl-list.after 2>&1
for p in $PIDS; do kill -0 $p 2>/dev/null && echo $p; done >/out/ps.after
tar -C /tmp -cf /out/s.tar fr tr st || exit 32
exit 0' xen LAB_TIMEOUT=900
expect_rc 0 "dom0 script"
tar -C "$OUT" -xf "$OUT/s.tar" || fail "cannot unpack the dom0 sessions"
FR=$OUT/fr S=$OUT/fr/snapshot-1 TR=$OUT/tr

# nothing on disk before the snapshot; the sizes said
[ -s "$OUT/fr.before" ] && fail "stream files on disk before any snapshot: $(tr '\n' ' ' <"$OUT/fr.before")"
grep -q "flight recorder: Xen .* pCPUs in dom0 memory" "$OUT/fr.err" || fail "record did not show Xen's ring sizes: $(cat "$OUT/fr.err")"
grep -q "flight recorder: host kernel" "$OUT/fr.err" || fail "record did not show the host ring: $(cat "$OUT/fr.err")"
[ "$(cat "$OUT/fr.snapshot.rc")" = 0 ] || fail "tracevisor snapshot failed: $(cat "$OUT/fr.snapshot")"
grep -q "/tmp/fr/snapshot-1" "$OUT/fr.snapshot" || fail "snapshot printed: $(cat "$OUT/fr.snapshot")"
[ "$(cat "$OUT/fr.rc")" = 0 ] || fail "record (on demand) exited $(cat "$OUT/fr.rc"): $(tail -n 3 "$OUT/fr.err")"

# the snapshot: both layers, each pCPU within its ring, the ring wrapped
grep -q "^domains=host,xen$" "$S/session.meta" || fail "snapshot domains: $(grep domains "$S/session.meta")"
meta() { sed -n "s/^$2=//p" "$1/xen/meta"; }
ring=$(meta "$S" flight_ring_bytes)
[ "${ring:-0}" -gt 0 ] || fail "snapshot xen/meta has no flight_ring_bytes"
[ "$(meta "$S" flight_bytes)" = 524288 ] || fail "flight_bytes $(meta "$S" flight_bytes)"
for f in "$S"/xen/cpu*.xen; do
	sz=$(stat -c %s "$f")
	[ "$sz" -le "$ring" ] || fail "$f: $sz bytes over its ring of $ring"
done
[ "$(meta "$S" flight_dropped)" -gt 0 ] || fail "the ring never wrapped: no record pushed out"
nsnap=$(meta "$S" events_total)
[ "$nsnap" -gt 1000 ] || fail "snapshot: only $nsnap Xen records"
[ -s "$S/host/meta" ] || fail "snapshot: no host/ (dom0's kernel)"

"$TV" report --json "$S" >"$T/s.json" || fail "report of the snapshot"
"$TV" stat "$S" >"$T/s.stat" || fail "stat of the snapshot"
"$TV" sync "$S" >"$T/s.sync" 2>&1 || fail "sync of the snapshot: $(tail -n 2 "$T/s.sync")"
[ -s "$S/sync/transforms" ] || fail "sync wrote no transforms"
"$TV" export --format ctf -o "$T/ctf" "$S" 2>"$T/ctf.err" || fail "export of the snapshot: $(cat "$T/ctf.err")"
[ -n "$(ls "$T/ctf")" ] || fail "export wrote nothing"
DOMID=$(cat "$OUT/d1.domid")
python3 - "$T/s.json" "$DOMID" <<'PY' || fail "snapshot contents (above)"
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"].startswith("xen:"):
        c["xen"] += 1
        if e["event"] == "xen:xen_vmexit" and e["fields"]["cur_dom"] == int(sys.argv[2]):
            c["d1 exits"] += 1
    elif e["event"] == "sched:sched_switch":
        c["dom0 sched_switch"] += 1
print("snapshot: %s" % dict(c))
sys.exit(0 if c["xen"] > 1000 and c["d1 exits"] > 10 and c["dom0 sched_switch"] > 0 else 1)
PY
grep -Eq "^d$DOMID +0 +vmexit:" "$T/s.stat" || fail "stat of the snapshot: no exit rows for d1: $(head -n 5 "$T/s.stat")"
# Ctrl-C: the last rings are the session itself
grep -q "^domains=host,xen$" "$FR/session.meta" || fail "final session domains: $(grep domains "$FR/session.meta")"
[ "$(meta "$FR" events_total)" -gt 1000 ] || fail "final session: $(meta "$FR" events_total) Xen records"

# the trigger: exactly one snapshot, on a real hlt exit of d1
[ "$(cat "$OUT/tr.rc")" = 0 ] || fail "record (trigger) exited $(cat "$OUT/tr.rc"): $(tail -n 3 "$OUT/tr.err")"
[ -f "$TR/snapshot-1/session.meta" ] || fail "the trigger did not fire: $(tail -n 5 "$OUT/tr.err")"
[ -e "$TR/snapshot-2" ] && fail "more than one snapshot with --max-snapshots 1"
tm() { sed -n "s/^$1=//p" "$TR/snapshot-1/session.meta"; }
[ "$(tm trigger)" = "exit-latency>5ms,reason=hlt" ] || fail "trigger=$(tm trigger)"
[ "$(tm trigger_vm)" = d1 ] && [ "$(tm trigger_vcpu)" = 0 ] && [ "$(tm trigger_domid)" = "$DOMID" ] || fail "trigger_vm=$(tm trigger_vm) trigger_vcpu=$(tm trigger_vcpu)"
[ "$(tm trigger_reason)" = hlt ] || [ "$(tm trigger_reason)" = HLT ] || fail "trigger_reason=$(tm trigger_reason)"
lat=$(tm trigger_latency_ns)
[ "${lat:-0}" -gt 5000000 ] || fail "trigger_latency_ns=$lat, not past 5 ms"
"$TV" report --json "$TR/snapshot-1" >"$T/t.json" || fail "report of the trigger's snapshot"
"$TV" stat "$TR/snapshot-1" >"$T/t.stat" || fail "stat of the trigger's snapshot"
python3 - "$T/t.json" "$(tm trigger_time)" "$DOMID" <<'PY' || fail "the triggering exit is not in the snapshot (above)"
import json, sys
t = int(sys.argv[2])
best = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "xen:xen_vmexit" and e["fields"]["cur_dom"] == int(sys.argv[3]):
        d = abs(int(e["ts"]) - t)
        best = d if best is None or d < best else best
print("the nearest d1 VMEXIT to trigger_time %d: %s ns away" % (t, best))
sys.exit(0 if best is not None and best < 1000 else 1)
PY
grep -Eq "^d$DOMID +0 +vmexit:hlt" "$T/t.stat" || fail "stat of the trigger's snapshot: no d1 hlt row"
"$TV" report "$TR/snapshot-1" | grep -B1 "^  ^ trigger: exit-latency>5ms,reason=hlt" | grep -q "xen:xen_vmexit d$DOMID v0 .*reason=hlt" ||
	fail "report does not mark the triggering VMEXIT"

# the stall: nothing in QUIET_S of normal running, one snapshot holding the 1 s exit
ST=$OUT/st
[ "$(cat "$OUT/st.rc")" = 0 ] || fail "record (stall) exited $(cat "$OUT/st.rc"): $(tail -n 3 "$OUT/st.err")"
grep -q snapshot "$OUT/st.quiet" && fail "a snapshot in $QUIET_S s of normal running: $(cat "$OUT/st.quiet")"
[ -f "$ST/snapshot-1/session.meta" ] || fail "the 1 s stall fired no trigger: $(tail -n 5 "$OUT/st.err")"
[ -e "$ST/snapshot-2" ] && fail "more than one snapshot for one stall"
sm() { sed -n "s/^$1=//p" "$ST/snapshot-1/session.meta"; }
slat=$(sm trigger_latency_ns)
[ "$(sm trigger_vm)" = d1 ] && [ "${slat:-0}" -ge 1000000000 ] ||
	fail "stall: trigger_vm=$(sm trigger_vm) trigger_latency_ns=$slat (>= 1 s expected)"
[ "$(sm trigger_reason)" != hlt ] || fail "stall: a hlt exit fired a rule without reason=hlt"
"$TV" stat --json "$ST/snapshot-1" >"$T/st.json" || fail "stat of the stall's snapshot"
python3 - "$T/st.json" "d$DOMID" "$(sm trigger_reason)" <<'PY' || fail "stat does not show the 1 s exit (above)"
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["vm"] == sys.argv[2] and r["reason"] == "vmexit:" + sys.argv[3]]
print("stall: stat rows %s" % [(r["vcpu"], r["reason"], r["count"], r["max_ns"]) for r in rows])
sys.exit(0 if rows and max(r["max_ns"] for r in rows) >= 1000000000 else 1)
PY

# what the scenario made is gone
grep -q "^d1 " "$OUT/xl-list.after" && fail "d1 still exists: $(cat "$OUT/xl-list.after")"
[ "$(cat "$OUT/d1.rc")" = 0 ] || fail "d1 ended with $(cat "$OUT/d1.rc") (lab-domu)"
[ -s "$OUT/ps.after" ] && fail "recorders still running in dom0: pids $(cat "$OUT/ps.after")"
echo "PASS: Xen flight recorder: nothing on disk before the snapshot; snapshot-1 $nsnap Xen records (ring $ring bytes per pCPU, $(meta "$S" flight_dropped) pushed out) read by report, stat, sync, export; trigger on d1 hlt exit of $lat ns; 1 s pause: one snapshot, exit of $slat ns, none in $QUIET_S s before; d1 ended" >&2
