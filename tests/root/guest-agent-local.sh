#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor-agent and record --guest on this host, without a VM: the
# agent's "virtio-serial port" is one end of a pty pair relayed to another
# (tests/root/ptyrelay.py), and the host records serial:OTHER_END.  Both
# record into their own tracefs instances of this kernel.  Checks the
# session layout, that both domains decode, message probes on both sides,
# no instance left behind, and a dead agent (killed mid-recording) giving a
# valid host trace with a guest stream marked truncated.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
[ -x "$AGENT" ] || fail "build/tracevisor-agent missing (make)"
LIBC=$(ldd "$SYSCALLS" | awk '/libc.so/ {print $3}')

start_relay() {
	rm -f "$TV_TMP/ptys"
	python3 "$TV_ROOT/tests/root/ptyrelay.py" >"$TV_TMP/ptys" &
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
(sleep 2; kill -9 $APID) &
KILLER=$!
"$TV" record -o "$S2" -e sched:sched_switch --guest "serial:$H1,name:dies" \
	--guest "serial:$H2,name:lives" --guest-events "sched:sched_switch,uprobe:gpid=$LIBC:syscall" --duration 4 \
	-- sh -c "sleep 0.5; $SYSCALLS --getppids 100 --quiet; sleep 4" 2>"$TV_TMP/record2.log" || { cat "$TV_TMP/record2.log" >&2; fail "record with a dying agent failed"; }
cat "$TV_TMP/record2.log" >&2
wait $KILLER
wait $A2 || fail "the surviving agent exited $?"
kill $R1 $RELAY
grep -q "^guest:lives .*probes:gpid" <("$TV" report "$S2") || fail "the living guest recorded no uprobe hit"
# A killed agent leaves its instance and its probe (--guest-events uprobe:):
# the next run removes them; the agent that lived removed its own.
grep -q "tvprobe_$APID/gpid" /sys/kernel/tracing/dynamic_events ||
	fail "the killed agent had no probe to leave (the check proves nothing)"
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
echo "PASS: local agent over a pty pair: $(grep -c guest:loc <("$TV" report "$S")) guest events; dead agent -> $(grep status= "$S2/guest-dies/meta"); other guest: $fig" >&2
