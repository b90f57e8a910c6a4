#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bounded loss on a crash (issue 22, point 7).  A `record` SIGKILLed while a
# workload makes one getppid() every 100 ms: its session reads (incomplete)
# with every event older than a second before the kill (the capture threads
# flush at least every 0.8 s); `tracevisor recover DIR` then salvages the
# rest from the leftover tracefs instance (as many events or more, meta
# status=recovered, the instance gone); in a second run the next `record -o
# OTHER` does it by itself, in one line.  Refusals: a running recorder, a
# directory that is no recording, an instance gone.  Trace clock mono, so
# that event times compare with CLOCK_MONOTONIC at the kill.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
[ -d $TRACEFS/events/syscalls/sys_enter_getppid ] || skip "no syscalls:sys_enter_getppid event"
W= PARENT=
cleanup() {
	[ -n "$W" ] && kill "$W" 2>/dev/null
	[ -n "$PARENT" ] && kill "$PARENT" 2>/dev/null
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

# The workload: one getppid() every 100 ms, until killed.
python3 -c 'import os, time
while True:
    os.getppid(); time.sleep(0.1)' & W=$!

# start_recorder DIR: a recorder of the workload's getppid, tracing; sets REC.
RECORD=(record -q -e syscalls:sys_enter_getppid -f "common_pid == $W" --clock mono)
start_recorder() {
	"$TV" "${RECORD[@]}" -o "$1" 2>"$1.err" &
	REC=$!
	wait_tracing $REC
}
# start_doomed DIR: the same, for a recorder to be killed, under a parent
# that never reaps it: killed, it stays a zombie, dead to tracevisor (which
# looks at its state) but alive to `kill -0`, so that no other, older
# tracevisor running on this host meanwhile removes its instance first.
start_doomed() {
	rm -f "$1.pid"
	# shellcheck disable=SC2016 # the sh -c script's own $0 and $@
	sh -c '"$@" 2>"$0.err" & echo $! >"$0.pid"; exec sleep 300' "$1" "$TV" "${RECORD[@]}" -o "$1" &
	PARENT=$!
	for _ in $(seq 100); do [ -s "$1.pid" ] && break; sleep 0.1; done
	REC=$(cat "$1.pid")
	wait_tracing $REC
}
# kill_recorder: SIGKILL REC, until its threads are gone; prints
# CLOCK_MONOTONIC (ns) just before the kill.
kill_recorder() {
	python3 -c 'import os, sys, time
pid = int(sys.argv[1])
t = time.clock_gettime_ns(time.CLOCK_MONOTONIC); os.kill(pid, 9); print(t)
for _ in range(500):
    st = open("/proc/%d/status" % pid).read()
    if "State:\tZ" in st and "Threads:\t1\n" in st: break
    time.sleep(0.01)' $REC
}
# reap: let the killed recorder go (its parent ends).
reap() { kill "$PARENT"; wait "$PARENT" 2>/dev/null; }
# times DIR: the times (ns) of the workload's events in DIR's report.
times() {
	"$TV" report "$1" 2>/dev/null | grep -- "-$W .*sys_enter_getppid" |
		sed -E 's/.*\] +([0-9]+)\.([0-9]{9}):.*/\1\2/'
}
events() { times "$1" | wc -l; }
# before DIR NS: how many of them are older than NS.
before() { times "$1" | awk -v t="$2" '$1 < t' | wc -l; }
meta() { sed -n "s/^$2=//p" "$1/host/meta"; }

# 1. Killed after 2 s: what is on disk, then `recover DIR`.
S=$TV_TMP/killed
start_doomed "$S"
sleep 2
t_kill=$(kill_recorder)
cp -r "$S" "$TV_TMP/as-killed"	# before recovery: read below
"$TV" recover "$S" 2>"$TV_TMP/recover.err"; rc=$?
reap
[ -e "$S/session.meta" ] && fail "killed run looks complete"
"$TV" report "$TV_TMP/as-killed" >/dev/null 2>"$TV_TMP/err" || fail "report of the killed run: $(cat "$TV_TMP/err")"
grep -q "warning: Incomplete session" "$TV_TMP/err" || fail "report did not say incomplete: $(cat "$TV_TMP/err")"
n_killed=$(events "$TV_TMP/as-killed")
[ "$n_killed" -gt 0 ] || fail "no event of the killed run on disk ($(ls -l "$TV_TMP/as-killed/host"))"
last=$(times "$TV_TMP/as-killed" | tail -n 1)
echo "killed run: $n_killed events on disk, the last $(( (t_kill - last) / 1000000 )) ms before the kill"
[ $rc = 0 ] || fail "recover exited $rc: $(cat "$TV_TMP/recover.err")"
# At most the last second lost: every event traced more than 1 s before the
# kill (all of them, as recovered) was on disk at the kill.
old=$(before "$S" $((t_kill - 1000000000)))
[ "$old" -gt 5 ] || fail "only $old events older than 1 s before the kill"
expect_eq "events older than 1 s before the kill on disk at the kill" \
	"$(before "$TV_TMP/as-killed" $((t_kill - 1000000000)))" "$old"
grep -q "more events .* from instance tracevisor-$REC of killed recorder $REC" "$TV_TMP/recover.err" ||
	fail "recover said: $(cat "$TV_TMP/recover.err")"
instance_left $REC && fail "instance tracevisor-$REC left after recover"
[ -e /run/tracevisor/instances/tracevisor-$REC ] && fail "registry entry left after recover"
n_rec=$(events "$S")
[ "$n_rec" -ge "$n_killed" ] || fail "recover lost events: $n_killed -> $n_rec"
expect_eq "host/meta status after recover" "$(meta "$S" status)" recovered
expect_eq "host/meta recovered_pid" "$(meta "$S" recovered_pid)" "$REC"
[ "$(meta "$S" events_total)" -ge "$n_rec" ] || fail "events_total $(meta "$S" events_total) < $n_rec decoded"
"$TV" report "$S" >/dev/null 2>"$TV_TMP/err" || fail "report after recover: $(cat "$TV_TMP/err")"
echo "recover: $n_killed -> $n_rec events, $(cat "$TV_TMP/recover.err")"
# Recovered once only.
"$TV" recover "$S" 2>"$TV_TMP/err" && fail "a second recover succeeded"
grep -q "Session already recovered: path=\"$S\"" "$TV_TMP/err" || fail "second recover said: $(cat "$TV_TMP/err")"

# 2. Killed again: the next `record -o OTHER` salvages it, says so in one line.
S2=$TV_TMP/killed2
start_doomed "$S2"
sleep 1.5
kill_recorder >/dev/null
dead=$REC
n_killed=$(events "$S2")
start_recorder "$TV_TMP/other"
reap
kill -INT $REC; wait $REC || fail "the next record failed: $(cat "$TV_TMP/other.err")"
instance_left $dead && fail "instance tracevisor-$dead left by the next record"
expect_eq "lines of the next record" "$(wc -l <"$TV_TMP/other.err")" 1
grep -q "tracevisor record: Recovered a killed recorder's trace: session=\"$S2\", pid=$dead: [0-9]* more events" "$TV_TMP/other.err" ||
	fail "the next record said: $(cat "$TV_TMP/other.err")"
"$TV" record -q -o "$TV_TMP/other2" -e syscalls:sys_enter_getppid --duration 0.1 2>"$TV_TMP/next.err" ||
	fail "record: $(cat "$TV_TMP/next.err")"
grep -q "Recovered a killed recorder's trace" "$TV_TMP/next.err" && fail "salvaged twice: $(cat "$TV_TMP/next.err")"
expect_eq "host/meta status after the next record" "$(meta "$S2" status)" recovered
n_rec=$(events "$S2")
[ "$n_rec" -ge "$n_killed" ] || fail "the next record's salvage lost events: $n_killed -> $n_rec"
echo "next record: $n_killed -> $n_rec events salvaged into $S2"

# 3. Refusals, each one line and a non-zero exit.
S3=$TV_TMP/live
start_recorder "$S3"
"$TV" recover "$S3" 2>"$TV_TMP/err" && fail "recover of a running recorder succeeded"
grep -q "Recorder still running: pid=$REC, session=\"$S3\"" "$TV_TMP/err" || fail "live: $(cat "$TV_TMP/err")"
[ "$(wc -l <"$TV_TMP/err")" = 1 ] || fail "live: more than one line: $(cat "$TV_TMP/err")"
instance_left $REC || fail "recover touched a running recorder's instance"
kill -INT $REC; wait $REC || fail "the live recorder failed after a refused recover"
[ -e "$S3/recorder" ] && fail "a clean stop left $S3/recorder"
mkdir -p "$TV_TMP/plain"
"$TV" recover "$TV_TMP/plain" 2>"$TV_TMP/err" && fail "recover of a plain directory succeeded"
grep -q "Not a recording to recover: path=\"$TV_TMP/plain\"" "$TV_TMP/err" || fail "plain: $(cat "$TV_TMP/err")"
"$TV" recover "$S3" 2>"$TV_TMP/err" && fail "recover of a complete session succeeded"
grep -q "Session is complete" "$TV_TMP/err" || fail "complete: $(cat "$TV_TMP/err")"
S4=$TV_TMP/gone
start_doomed "$S4"
kill_recorder >/dev/null
reap
rmdir "$TRACEFS/instances/tracevisor-$REC" || fail "cannot remove the instance by hand"
"$TV" recover "$S4" 2>"$TV_TMP/err" && fail "recover without the instance succeeded"
grep -q "Cannot recover: instance gone: path=\"$TRACEFS/instances/tracevisor-$REC\"" "$TV_TMP/err" ||
	fail "gone: $(cat "$TV_TMP/err")"
"$TV" report "$S4" >/dev/null 2>&1 || fail "report of $S4 after a refused recover"
[ -e /run/tracevisor/instances/tracevisor-$REC ] || fail "no registry entry for tracevisor-$REC"
"$TV" record -q -o "$TV_TMP/prune" -e syscalls:sys_enter_getppid --duration 0.1 || fail "record after an instance gone"
[ -e /run/tracevisor/instances/tracevisor-$REC ] && fail "registry entry of a gone instance kept by the next record"
echo "refused: a running recorder, a plain directory, a complete session, an instance gone"
