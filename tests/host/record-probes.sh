#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Dynamic probes and function timing on this host (tests/e2e/kvm-svm-probes.sh
# does kprobes in the lab's L1, whose kernel has kprobe_events):
#  - uprobe and uretprobe on libc's syscall() by symbol, with fetch args,
#    while tv-syscalls makes N getppid and M lseek calls through it: exactly
#    N probes with nr=110 and M with nr=8, N+M returns; recorded as probes:NAME;
#  - --time-function PATH:SYMBOL: stat's func:syscall row counts N+M calls,
#    timed;
#  - -f after -e filters that event only, in the kernel (nr == 8: M hits);
#  - every probe removed after each run, also one ended by SIGINT or
#    SIGTERM; a probe left by a run killed with SIGKILL is removed by the
#    next run;
#  - a kernel without kprobe_events: one-line error naming it, exit 1;
#    a uprobe on a missing function: one-line error, exit 1.
# Each check looks at the probes of the recorder it started (tvprobe_PID,
# tvfunc_PID) and at the events of its own workload (by pid): other
# people's recorders and programs may run on this host meanwhile, and a
# uprobe on libc fires in every process.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
[ -e $TRACEFS/uprobe_events ] || fail "no uprobe_events on this host: the lab's L1 runs this test's kprobe half"
LIBC=$(ldd "$SYSCALLS" | awk '/libc.so/ {print $3}')
[ -f "$LIBC" ] || fail "cannot find the libc of $SYSCALLS"
N=1000 M=500 T=$TV_TMP
# rec ARGS...: tracevisor record ARGS in the background, its pid in REC, its status returned
rec() { "$TV" record "$@" & REC=$!; wait $REC; }
# work FILE: tv-syscalls' pid, from what it said in FILE (the workload's own events only)
work() { sed -n 's/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$1" | grep . || fail "tv-syscalls said: $(cat "$1")"; }

rec -q -o "$T/up" -e "uprobe:sc=$LIBC:syscall nr=%di:s64" \
	-e "uretprobe:scret=$LIBC:syscall ret=\$retval:s64" -- "$SYSCALLS" --getppids $N --seeks $M >"$T/up.out" ||
	fail "record with uprobes failed"
[ "$(probes_left $REC)" = 0 ] || fail "probes left after the run: $(cat $TRACEFS/dynamic_events)"
"$TV" report "$T/up" | grep "^ *tv-syscalls-$(work "$T/up.out") " >"$T/up.txt" || fail "report of the uprobe session: no event of tv-syscalls"
got=$(grep -c "probes:sc .* nr=110$" "$T/up.txt"); [ "$got" = $N ] || fail "uprobe nr=110 (getppid): $got, want $N"
got=$(grep -c "probes:sc .* nr=8$" "$T/up.txt"); [ "$got" = $M ] || fail "uprobe nr=8 (lseek): $got, want $M"
got=$(grep -c "probes:scret " "$T/up.txt"); [ "$got" = $((N + M)) ] || fail "uretprobe: $got, want $((N + M))"

rec -q -o "$T/f" -e "uprobe:sc=$LIBC:syscall nr=%di:s64" -f 'nr == 8' \
	-e "uprobe:sc2=$LIBC:syscall nr=%di:s64" \
	-- "$SYSCALLS" --getppids $N --seeks $M >"$T/f.out" || fail "record with -f after -e failed"
[ "$(probes_left $REC)" = 0 ] || fail "probes left after the filtered run: $(cat $TRACEFS/dynamic_events)"
"$TV" report "$T/f" | grep "^ *tv-syscalls-$(work "$T/f.out") " >"$T/f.txt" || fail "report of the filtered session: no event of tv-syscalls"
got=$(grep -c "probes:sc " "$T/f.txt")
[ "$got" = $M ] || fail "-f 'nr == 8' after the uprobe: $got events, want $M"
got=$(grep -c "probes:sc2 " "$T/f.txt")
[ "$got" = $((N + M)) ] || fail "the -e after the filtered one is filtered too: $got events, want $((N + M))"

rec -q -o "$T/tf" --time-function "$LIBC:syscall" -- "$SYSCALLS" --getppids $N --seeks $M >"$T/tf.out" ||
	fail "record --time-function failed"
[ "$(probes_left $REC)" = 0 ] || fail "probes left after --time-function: $(cat $TRACEFS/dynamic_events)"
"$TV" stat --json "$T/tf" >"$T/tf.json" || fail "stat of --time-function failed"
python3 - "$T/tf.json" $((N + M)) "tv-syscalls[$(work "$T/tf.out")]" <<'PY' || fail "stat's func:syscall row"
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["reason"] == "func:syscall" and r["vm"] == sys.argv[3]]
assert len(rows) == 1, rows
r = rows[0]
assert r["count"] == int(sys.argv[2]), r
assert r["vcpu"] == "-", r
assert 0 < r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"] <= r["total_ns"], r
PY

# SIGINT and SIGTERM end a recording through its normal stop: no probe left.
for sig in INT TERM; do
	"$TV" record -q -o "$T/sig$sig" -e "uprobe:s1=$LIBC:getpid" --time-function "$LIBC:syscall" &
	pid=$!
	for _ in $(seq 50); do [ "$(probes_left $pid)" -ge 3 ] && break; sleep 0.1; done
	[ "$(probes_left $pid)" -ge 3 ] || fail "SIG$sig: the run's probes never appeared"
	kill -$sig $pid
	wait $pid || fail "record ended by SIG$sig exited $?"
	[ "$(probes_left $pid)" = 0 ] || fail "SIG$sig: probes left: $(cat $TRACEFS/dynamic_events)"
	[ -f "$T/sig$sig/session.meta" ] || fail "SIG$sig: the session is not complete"
done

# A run killed with SIGKILL leaves its probe; the next run removes it.
"$TV" record -q -o "$T/killed" -e "uprobe:k1=$LIBC:getpid" &
pid=$!
for _ in $(seq 50); do [ "$(probes_left $pid)" -gt 0 ] && break; sleep 0.1; done
[ "$(probes_left $pid)" -gt 0 ] || fail "the probe of the run to kill never appeared"
grep "^.:tvprobe_$pid/" $TRACEFS/dynamic_events >"$T/killed-probe"
kill -9 $pid; wait $pid 2>/dev/null
# Any other recorder starting on this host meanwhile removes the stale
# probe too (what "the next run" does): then put it back, for ours to remove.
[ "$(probes_left $pid)" -gt 0 ] || cat "$T/killed-probe" >>$TRACEFS/dynamic_events ||
	fail "cannot put the killed run's probe back"
[ "$(probes_left $pid)" -gt 0 ] || fail "SIGKILL: no stale probe to remove (the test proves nothing)"
"$TV" record -q -o "$T/next" -e sched:sched_switch -- true || fail "the run after a killed one failed"
[ "$(probes_left $pid)" = 0 ] || fail "the stale probe of the killed run was not removed: $(cat $TRACEFS/dynamic_events)"

if [ ! -e $TRACEFS/kprobe_events ]; then
	"$TV" record -q -o "$T/kp" -e 'kprobe:k=do_sys_openat2' -- true 2>"$T/err" && fail "a kprobe without kprobe_events was accepted"
	[ "$(wc -l <"$T/err")" = 1 ] && grep -q "no kprobe_events" "$T/err" || fail "no kprobe_events: $(cat "$T/err")"
	[ ! -e "$T/kp" ] || fail "a failed record left its session directory"
fi
rec -q -o "$T/bad" -e "uprobe:u=$LIBC:no_such_function_xyz" -- true 2>"$T/err" && fail "a uprobe on a missing function was accepted"
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "no such function" "$T/err" || fail "missing function: $(cat "$T/err")"
[ "$(probes_left $REC)" = 0 ] || fail "probes left after a failed run: $(cat $TRACEFS/dynamic_events)"
echo "PASS: uprobes exact ($N + $M), -f per event, --time-function row, stale probe removed, errors" >&2
