#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor-agent and record --guest on this host, without a VM: the
# agent's "virtio-serial port" is one end of a pty pair relayed to another
# (tests/host/ptyrelay.py), and the host records serial:OTHER_END.  Both
# record into their own tracefs instances of this kernel.  Checks the
# session layout, that both domains decode, message probes on both sides,
# no instance left behind, and a dead agent (killed mid-recording) giving a
# valid host trace with a guest stream marked truncated; guest event
# filters (-f after --guest-events) applied exactly, and one the guest
# kernel refuses said in one line, the rest of the session kept.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
[ -x "$AGENT" ] || fail "build/tracevisor-agent missing (make)"
LIBC=$(ldd "$SYSCALLS" | awk '/libc.so/ {print $3}')

start_relay() {
	rm -f "$TV_TMP/ptys"
	python3 "$TV_ROOT/tests/host/ptyrelay.py" >"$TV_TMP/ptys" &
	RELAY=$!
	for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$TV_TMP/ptys" ] && break; sleep 0.2; done
	read -r GPTY HPTY <"$TV_TMP/ptys" || fail "pty relay did not start"
}
trap 'kill $RELAY $APID ${R1:-} ${A2:-} 2>/dev/null' EXIT

# 1. A whole recording.  -H: no hypercall probes (this host is itself a
# guest of some hypervisor: the probe is for guests of the recording host).
start_relay
"$AGENT" -p 0 -s "$GPTY" -1 -H -v 2>"$TV_TMP/agent.log" &
APID=$!
S=$TV_TMP/s
"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$HPTY,name:loc" \
	--guest-events sched:sched_switch,sched:sched_wakeup --sync-interval 0.5 --duration 3 \
	-- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do ls / >/dev/null; sleep 0.1; done' \
	2>"$TV_TMP/record.log" || { cat "$TV_TMP/record.log" "$TV_TMP/agent.log" >&2; fail "record --guest failed"; }
wait $APID || fail "agent exited $?"
cat "$TV_TMP/record.log" >&2
grep -q "guest loc: .*complete" "$TV_TMP/record.log" || fail "no guest summary line"
fig=$(python3 "$TV_ROOT/tests/e2e/guest_check.py" "$TV" "$S" loc --min-guest-events 10 --min-pings 10) ||
	fail "session check: $fig"
echo "ok: $fig" >&2
for f in meta header_page header_event saved_cmdlines events/sched/sched_switch/format \
	events/ftrace/raw_data/format cpu0.raw; do
	[ -e "$S/guest-loc/$f" ] || fail "guest-loc/$f missing"
done
grep -q "^kind=linux-ftrace$" "$S/guest-loc/meta" || fail "guest meta has no kind"
grep -q "^lost_total=" "$S/guest-loc/meta" || fail "guest meta has no loss count"
ls /sys/kernel/tracing/instances | grep -q "^tracevisor-agent-$APID$" && fail "agent's tracefs instance left behind"
kill $RELAY

# 2. Two guests; one agent dies mid-recording: the host trace and the other
# guest go on, the dead one's stream is kept and marked truncated; its
# dynamic probe is removed by the next run.
start_relay
G1=$GPTY H1=$HPTY R1=$RELAY
start_relay
G2=$GPTY H2=$HPTY
"$AGENT" -p 0 -s "$G1" -1 -H 2>/dev/null &
APID=$!
"$AGENT" -p 0 -s "$G2" -1 -H 2>"$TV_TMP/agent2.log" &
A2=$!
S2=$TV_TMP/s2
# The killed agent's probe line, taken just before the kill: the proof it had one.
(sleep 2; grep "^.:tvprobe_$APID/" /sys/kernel/tracing/dynamic_events >"$TV_TMP/killed-probe"; kill -9 $APID) &
KILLER=$!
"$TV" record -o "$S2" -e sched:sched_switch --guest "serial:$H1,name:dies" \
	--guest "serial:$H2,name:lives" --guest-events "sched:sched_switch,uprobe:gpid=$LIBC:syscall" --duration 4 \
	-- sh -c "sleep 0.5; $SYSCALLS --getppids 100 --quiet; sleep 4" 2>"$TV_TMP/record2.log"
rc=$?
cat "$TV_TMP/record2.log" >&2
# recorded, but a guest's stream is incomplete: 3 (doc/man/tracevisor-record.1)
[ $rc = 3 ] || fail "record with a dying agent exited $rc, want 3"
grep -q "^tracevisor record: 1 of 2 guests incomplete: dies (truncated); exit status 3$" "$TV_TMP/record2.log" ||
	fail "the incomplete guest is not named in one line"
wait $KILLER
wait $A2 || fail "the surviving agent exited $?"
kill $R1 $RELAY
grep -q "^guest:lives .*probes:gpid" <("$TV" report "$S2") || fail "the living guest recorded no uprobe hit"
# A killed agent leaves its instance and its probe (--guest-events uprobe:):
# the next run removes them; the agent that lived removed its own.  The
# living agent also removes, as it ends, the probes of agents that are gone
# — whether it saw this one gone depends on when the shell reaped it — so
# the killed agent's probe is put back as it was before the next run.
grep -q "tvprobe_$APID/gpid" "$TV_TMP/killed-probe" ||
	fail "the killed agent had no probe to leave (the check proves nothing)"
wait $APID 2>/dev/null
grep -q "tvprobe_$APID/gpid" /sys/kernel/tracing/dynamic_events ||
	cat "$TV_TMP/killed-probe" >>/sys/kernel/tracing/dynamic_events || fail "cannot put the killed agent's probe back"
grep -q "tvprobe_$A2/" /sys/kernel/tracing/dynamic_events && fail "the agent that lived left its probe"
start_relay
"$AGENT" -p 0 -s "$GPTY" -1 -H 2>/dev/null &
A3=$!
"$TV" record -o "$TV_TMP/s3" -e sched:sched_switch --guest "serial:$HPTY,name:next" --duration 1 \
	2>/dev/null || fail "the run after a killed agent failed"
wait $A3
kill $RELAY
grep -q "tvprobe_$APID/" /sys/kernel/tracing/dynamic_events && fail "the killed agent's probe was not removed"
rmdir /sys/kernel/tracing/instances/tracevisor-agent-$APID 2>/dev/null
grep -q "^status=truncated: " "$S2/guest-dies/meta" || fail "guest meta: $(grep status "$S2/guest-dies/meta")"
grep -q "^domains=host,guest-dies,guest-lives$" "$S2/session.meta" || fail "session.meta: $(grep domains "$S2/session.meta")"
fig=$(python3 "$TV_ROOT/tests/e2e/guest_check.py" "$TV" "$S2" lives --min-guest-events 10 --min-pings 10) ||
	fail "the surviving guest: $fig"
"$TV" report "$S2" >"$TV_TMP/r2" || fail "report of a session with a dead guest failed"
grep -q "^host .*sched:sched_switch" "$TV_TMP/r2" || fail "host events missing"
grep -q "^guest:dies .*sched:sched_switch" "$TV_TMP/r2" || fail "the dead guest's events before the kill are missing"
# 3. Guest filters: -f after --guest-events filters each event of that list
# in the guest's kernel; an unfiltered list beside them stays whole.
start_relay
"$AGENT" -p 0 -s "$GPTY" -1 -H 2>"$TV_TMP/agent3.log" &
A3=$!
S4=$TV_TMP/s4
"$TV" record -o "$S4" -e sched:sched_switch --guest "serial:$HPTY,name:flt" \
	--guest-events raw_syscalls:sys_enter -f 'id == 110 && comm == "tv-syscalls"' \
	--guest-events "uprobe:gsc=$LIBC:syscall nr=%di:s64" -f 'nr == 8' \
	--guest-events sched:sched_switch --duration 3 \
	-- sh -c "sleep 0.5; exec $SYSCALLS --getppids 100 --seeks 30 >$TV_TMP/w4.out" 2>"$TV_TMP/record4.log" ||
	{ cat "$TV_TMP/record4.log" "$TV_TMP/agent3.log" >&2; fail "record with guest filters failed"; }
wait $A3 || fail "agent exited $?"
kill $RELAY
"$TV" report "$S4" >"$TV_TMP/r4" || fail "report of the filtered session failed"
# Exactly our workload's calls (by its pid), and nothing the filter should
# have dropped: other tv-syscalls may run on this host (the "guest" here),
# and pass the filter too.
w4=$(sed -n 's/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$TV_TMP/w4.out")
[ -n "$w4" ] || fail "tv-syscalls said: $(cat "$TV_TMP/w4.out")"
enter=$(grep -c "^guest:flt .*raw_syscalls:sys_enter" "$TV_TMP/r4")
enter110=$(grep -c "^guest:flt  *tv-syscalls-[0-9]* .*raw_syscalls:sys_enter NR 110 " "$TV_TMP/r4")
ours=$(grep -c "^guest:flt  *tv-syscalls-$w4 .*raw_syscalls:sys_enter NR 110 " "$TV_TMP/r4")
[ "$ours" = 100 ] && [ "$enter" = "$enter110" ] ||
	fail "guest raw_syscalls:sys_enter with 'id == 110 && comm == \"tv-syscalls\"': $enter events ($enter110 getppid of a tv-syscalls, $ours of ours), want exactly 100 of ours and none outside the filter"
gsc=$(grep -c "^guest:flt .*probes:gsc " "$TV_TMP/r4")
gsc8=$(grep -c "^guest:flt .*probes:gsc .*nr=8$" "$TV_TMP/r4")
gsc_ours=$(grep -c "^guest:flt  *tv-syscalls-$w4 .*probes:gsc .*nr=8$" "$TV_TMP/r4")
[ "$gsc_ours" = 30 ] && [ "$gsc" = "$gsc8" ] ||
	fail "guest uprobe gsc with 'nr == 8': $gsc hits ($gsc8 with nr=8, $gsc_ours of ours), want exactly the 30 lseeks of our 130 syscall() calls and none outside the filter"
switches=$(grep -c "^guest:flt .*sched:sched_switch" "$TV_TMP/r4")
[ "$switches" -gt 10 ] || fail "the unfiltered guest sched_switch list has $switches events"
grep -q "tvprobe_$A3/" /sys/kernel/tracing/dynamic_events && fail "the filtered probe was left behind"

# 4. A filter the guest kernel refuses: one line naming the guest and the
# event, record exits 3 (a guest incomplete), the host's recording is complete, and the agent
# leaves no instance and no probe.
start_relay
"$AGENT" -p 0 -s "$GPTY" -1 -H 2>/dev/null &
A4=$!
S5=$TV_TMP/s5
"$TV" record -o "$S5" -e sched:sched_switch --guest "serial:$HPTY,name:bad" \
	--guest-events sched:sched_switch --guest-events "uprobe:gbad=$LIBC:syscall" -f 'nosuch == 1' \
	--duration 2 2>"$TV_TMP/record5.log"
rc=$?
wait $A4
kill $RELAY
cat "$TV_TMP/record5.log" >&2
[ $rc = 3 ] || fail "record with a refused guest filter exited $rc, want 3"
grep -q '^tracevisor record: guest bad failed: guest agent: Cannot set filter: event="probes:gbad", filter="nosuch == 1", errno=22 (Invalid argument), kernel: "Field not found"; recording the rest$' \
	"$TV_TMP/record5.log" || fail "no one-line reason naming the guest and the event"
[ "$(grep -c "Cannot set filter" "$TV_TMP/record5.log")" = 2 ] ||
	fail "the reason should be said once, and once in the guest's summary line"
grep -q "^domains=host$" "$S5/session.meta" || fail "session.meta: $(grep domains "$S5/session.meta")"
grep -q '^status=failed: guest agent: Cannot set filter: event="probes:gbad"' "$S5/guest-bad/meta" ||
	fail "guest meta: $(grep status "$S5/guest-bad/meta")"
"$TV" report "$S5" >"$TV_TMP/r5" || fail "report of the session with a refused guest failed"
grep -q " sched:sched_switch " "$TV_TMP/r5" || fail "the host's events of that session are missing"
[ -e "/sys/kernel/tracing/instances/tracevisor-agent-$A4" ] && fail "the refusing agent left its instance"
grep -q "tvprobe_$A4/" /sys/kernel/tracing/dynamic_events && fail "the refusing agent left its probe"

# 5. An agent reused after a truncated session: the recorder is SIGKILLed
# mid-session, its channel (the pty pair, as a console: it stays open in the
# guest) fills with that session's frames; the next record against the same
# agent ends the old session in the agent (START during a session), finds
# its reply after the stale bytes (HELLO echoing its nonce), says how many
# bytes it discarded in one line and records the guest complete.
start_relay
"$AGENT" -p 0 -s "$GPTY" -H -v 2>"$TV_TMP/agent5.log" &
A5=$!
"$TV" record -o "$TV_TMP/s6" -e sched:sched_switch --guest "serial:$HPTY,name:reuse" \
	--guest-events sched:sched_switch,sched:sched_wakeup 2>/dev/null &
R5=$!
sleep 3
kill -KILL $R5
wait $R5 2>/dev/null
sleep 4	# the agent goes on streaming into the channel for nobody
S7=$TV_TMP/s7
"$TV" record -o "$S7" -e sched:sched_switch --guest "serial:$HPTY,name:reuse" \
	--guest-events sched:sched_switch,sched:sched_wakeup --duration 2 2>"$TV_TMP/record7.log" ||
	{ cat "$TV_TMP/record7.log" "$TV_TMP/agent5.log" >&2; fail "record after a killed recorder failed"; }
kill $A5 $RELAY
wait $A5 2>/dev/null
cat "$TV_TMP/record7.log" >&2
grep -q "^status=complete$" "$S7/guest-reuse/meta" ||
	fail "the reused agent's guest: $(grep status= "$S7/guest-reuse/meta"); agent: $(cat "$TV_TMP/agent5.log")"
stale=$(sed -n 's/^stale_bytes=//p' "$S7/guest-reuse/meta")
[ "${stale:-0}" -gt 0 ] || fail "no stale bytes counted: the channel held the killed session's frames"
[ "$(grep -c "^tracevisor record: warning: Guest reuse: $stale stale bytes of an earlier session discarded before the agent's HELLO$" "$TV_TMP/record7.log")" = 1 ] ||
	fail "the stale bytes are not said in one line"
grep -q "A new session was asked for during one" "$TV_TMP/agent5.log" ||
	fail "the agent did not end the killed recorder's session: $(cat "$TV_TMP/agent5.log")"
[ -e "/sys/kernel/tracing/instances/tracevisor-agent-$A5" ] && fail "the reused agent left its instance"

echo "PASS: reused agent after a killed recorder: complete, $stale stale bytes discarded" >&2
echo "PASS: local agent over a pty pair: $(grep -c guest:loc <("$TV" report "$S")) guest events; dead agent -> $(grep status= "$S2/guest-dies/meta"); other guest: $fig; guest filters exact ($enter sys_enter, $gsc uprobe hits); refused filter: one line, exit 3, nothing left" >&2
