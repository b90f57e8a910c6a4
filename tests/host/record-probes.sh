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
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
[ -e $TRACEFS/uprobe_events ] || fail "no uprobe_events on this host: the lab's L1 runs this test's kprobe half"
LIBC=$(ldd "$SYSCALLS" | awk '/libc.so/ {print $3}')
[ -f "$LIBC" ] || fail "cannot find the libc of $SYSCALLS"
N=1000 M=500 T=$TV_TMP
left() { grep -c "tvprobe_\|tvfunc_" $TRACEFS/dynamic_events; }

"$TV" record -q -o "$T/up" -e "uprobe:sc=$LIBC:syscall nr=%di:s64" \
	-e "uretprobe:scret=$LIBC:syscall ret=\$retval:s64" -- "$SYSCALLS" --getppids $N --seeks $M --quiet ||
	fail "record with uprobes failed"
[ "$(left)" = 0 ] || fail "probes left after the run: $(cat $TRACEFS/dynamic_events)"
"$TV" report "$T/up" >"$T/up.txt" || fail "report of the uprobe session failed"
got=$(grep -c "probes:sc .* nr=110$" "$T/up.txt"); [ "$got" = $N ] || fail "uprobe nr=110 (getppid): $got, want $N"
got=$(grep -c "probes:sc .* nr=8$" "$T/up.txt"); [ "$got" = $M ] || fail "uprobe nr=8 (lseek): $got, want $M"
got=$(grep -c "probes:scret " "$T/up.txt"); [ "$got" = $((N + M)) ] || fail "uretprobe: $got, want $((N + M))"

"$TV" record -q -o "$T/f" -e "uprobe:sc=$LIBC:syscall nr=%di:s64" -f 'nr == 8' \
	-e "uprobe:sc2=$LIBC:syscall nr=%di:s64" \
	-- "$SYSCALLS" --getppids $N --seeks $M --quiet || fail "record with -f after -e failed"
"$TV" report "$T/f" >"$T/f.txt" || fail "report of the filtered session failed"
got=$(grep -c "probes:sc " "$T/f.txt")
[ "$got" = $M ] || fail "-f 'nr == 8' after the uprobe: $got events, want $M"
got=$(grep -c "probes:sc2 " "$T/f.txt")
[ "$got" = $((N + M)) ] || fail "the -e after the filtered one is filtered too: $got events, want $((N + M))"

"$TV" record -q -o "$T/tf" --time-function "$LIBC:syscall" -- "$SYSCALLS" --getppids $N --seeks $M --quiet ||
	fail "record --time-function failed"
[ "$(left)" = 0 ] || fail "probes left after --time-function: $(cat $TRACEFS/dynamic_events)"
"$TV" stat --json "$T/tf" >"$T/tf.json" || fail "stat of --time-function failed"
python3 - "$T/tf.json" $((N + M)) <<'PY' || fail "stat's func:syscall row"
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["reason"] == "func:syscall"]
assert len(rows) == 1, rows
r = rows[0]
assert r["count"] == int(sys.argv[2]), r
assert r["vm"].startswith("tv-syscalls[") and r["vcpu"] == "-", r
assert 0 < r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"] <= r["total_ns"], r
PY

# SIGINT and SIGTERM end a recording through its normal stop: no probe left.
for sig in INT TERM; do
	"$TV" record -q -o "$T/sig$sig" -e "uprobe:s1=$LIBC:getpid" --time-function "$LIBC:syscall" &
	pid=$!
	for _ in $(seq 50); do [ "$(left)" -ge 3 ] && break; sleep 0.1; done
	[ "$(left)" -ge 3 ] || fail "SIG$sig: the run's probes never appeared"
	kill -$sig $pid
	wait $pid || fail "record ended by SIG$sig exited $?"
	[ "$(left)" = 0 ] || fail "SIG$sig: probes left: $(cat $TRACEFS/dynamic_events)"
	[ -f "$T/sig$sig/session.meta" ] || fail "SIG$sig: the session is not complete"
done

# A run killed with SIGKILL leaves its probe; the next run removes it.
"$TV" record -q -o "$T/killed" -e "uprobe:k1=$LIBC:getpid" &
pid=$!
for _ in $(seq 50); do [ "$(left)" -gt 0 ] && break; sleep 0.1; done
[ "$(left)" -gt 0 ] || fail "the probe of the run to kill never appeared"
kill -9 $pid; wait $pid 2>/dev/null
[ "$(left)" -gt 0 ] || fail "SIGKILL: no stale probe to remove (the test proves nothing)"
"$TV" record -q -o "$T/next" -e sched:sched_switch -- true || fail "the run after a killed one failed"
[ "$(left)" = 0 ] || fail "the stale probe of the killed run was not removed: $(cat $TRACEFS/dynamic_events)"

if [ ! -e $TRACEFS/kprobe_events ]; then
	"$TV" record -q -o "$T/kp" -e 'kprobe:k=do_sys_openat2' -- true 2>"$T/err" && fail "a kprobe without kprobe_events was accepted"
	[ "$(wc -l <"$T/err")" = 1 ] && grep -q "no kprobe_events" "$T/err" || fail "no kprobe_events: $(cat "$T/err")"
	[ ! -e "$T/kp" ] || fail "a failed record left its session directory"
fi
"$TV" record -q -o "$T/bad" -e "uprobe:u=$LIBC:no_such_function_xyz" -- true 2>"$T/err" && fail "a uprobe on a missing function was accepted"
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "no such function" "$T/err" || fail "missing function: $(cat "$T/err")"
[ "$(left)" = 0 ] || fail "probes left after a failed run: $(cat $TRACEFS/dynamic_events)"
echo "PASS: uprobes exact ($N + $M), -f per event, --time-function row, stale probe removed, errors" >&2
