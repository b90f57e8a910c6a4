# SPDX-License-Identifier: GPL-2.0
# Ctrl-C (SIGINT) and SIGTERM leave a valid trace and a clean tracefs; a
# stale instance of a killed run is removed by the next run.  System-call
# events: every kernel fires them, KVM or not.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
on_before=$(cat $TRACEFS/tracing_on)
for sig in INT TERM; do
	S=$TV_TMP/s-$sig
	"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid & rec=$!
	wait_tracing $rec
	"$SYSCALLS" --getppids 300 > "$TV_TMP/w.out" || fail "workload failed"
	pid=$(sed -n 's/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$TV_TMP/w.out")
	kill -$sig $rec
	wait $rec || fail "record exited $? on SIG$sig"
	! instance_left $rec || fail "instance left after SIG$sig"
	n=$("$TV" report "$S" | grep -c "tv-syscalls-$pid .*syscalls:sys_enter_getppid")
	expect_eq "events after SIG$sig" "$n" 300
done
# A run killed with SIGKILL leaves its instance; the next run removes it.
"$TV" record -q -o "$TV_TMP/killed" -e syscalls:sys_enter_getppid & rec=$!
wait_tracing $rec
kill -KILL $rec; wait $rec 2>/dev/null
instance_left $rec || fail "expected a stale instance after SIGKILL"
[ -e "$TV_TMP/killed/session.meta" ] && fail "killed run looks complete"
# What reached the disk reads, with one warning that the session is incomplete.
"$TV" report "$TV_TMP/killed" >/dev/null 2>"$TV_TMP/killed.err" || fail "report of the killed run failed: $(cat "$TV_TMP/killed.err")"
grep -q "warning: Incomplete session" "$TV_TMP/killed.err" ||
	fail "report did not flag the killed run as incomplete: $(cat "$TV_TMP/killed.err")"
"$TV" record -q -o "$TV_TMP/next" -e syscalls:sys_enter_getppid --duration 0.2 || fail "next run failed"
instance_left $rec && fail "stale instance tracevisor-$rec not removed"
expect_eq "top-level tracing_on untouched" "$(cat $TRACEFS/tracing_on)" "$on_before"
echo "signals handled"
