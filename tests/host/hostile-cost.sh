#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bounded cost per guest (issue #22, point 3): fake guests
# (tests/helpers/tv_cost_agent.py over tv_fake_agent.py) next to an honest
# one, each case asserting a bound that failed before:
#  1. empty UST_META frames at 6 KB/s after a 4 MiB entry that never ends:
#     record's CPU time (was 2.5 s per 5 s of recording: every frame searched
#     the 4 MiB again);
#  2. 16 traced processes of 4 MiB of metadata each: record's max RSS (the
#     guest's 16 MiB budget cuts the 5th on; was all of it held), and the
#     summary counts the 16 and the 12 cut off;
#  3. META ncpus=1024 and data on every CPU under `ulimit -n 1024`: record
#     stops at --duration with both guests complete, its open descriptors
#     bounded (was: timerfd_create failed with EMFILE, record never stopped);
#  4. 60 small traced processes: max RSS of report and sync (was 0.7 and
#     1.3 GB: 11 MB of tables per domain);
#  5. a guest CPU whose clock steps back 10,000 times: export --format ctf
#     makes at most 8 files for it (was 10,001), read by babeltrace2;
#  6. a guest's traced process whose records carry 5,000 thread ids on 2
#     CPUs: export --format ctf makes at most 256 thread files and 2 CPU
#     files for it (was 10,000) and keeps every event, under `ulimit -n 128`
#     (was: EMFILE).
# COST_CASES="spin threads ...": only these cases (default: all).
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
AGENT="python3 $TV_ROOT/tests/helpers/tv_cost_agent.py"
PIDS=""
trap 'kill $PIDS 2>/dev/null' EXIT

# run NAME MODE DURATION [ULIMIT]: record an evil guest (MODE) and an honest
# one; sets S and leaves "wall user sys maxrss_kb" in $TV_TMP/NAME.time
run() {
	local name=$1 mode=$2 dur=$3 ul=${4:-} e g
	S=$TV_TMP/$name
	$AGENT "$mode" "$TV_TMP/$name-evil.sock" >"$TV_TMP/$name-evil.log" 2>&1 &
	e=$!
	$AGENT honest "$TV_TMP/$name-good.sock" >"$TV_TMP/$name-good.log" 2>&1 &
	g=$!
	PIDS="$e $g"
	for _ in $(seq 50); do [ -S "$TV_TMP/$name-evil.sock" ] && [ -S "$TV_TMP/$name-good.sock" ] && break; sleep 0.1; done
	(
		[ -n "$ul" ] && ulimit -n "$ul"
		exec /usr/bin/time -f "%e %U %S %M" -o "$TV_TMP/$name.time" timeout -s KILL 60 \
			"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$TV_TMP/$name-evil.sock,name:evil" \
			--guest "serial:$TV_TMP/$name-good.sock,name:good" --ust "*" --ust-socket "$TV_TMP/$name-ust.sock" --duration "$dur"
	) >"$TV_TMP/$name.out" 2>"$TV_TMP/$name.err" &
	RPID=$!
}
finish() {	# NAME: wait for record; fail unless it ended well with the honest guest whole
	local name=$1 rc n
	wait "$RPID"; rc=$?
	kill $PIDS 2>/dev/null; wait $PIDS 2>/dev/null
	cat "$TV_TMP/$name.err" >&2
	[ $rc = 0 ] || fail "$name: record exited $rc ($(tail -n 1 "$TV_TMP/$name.time"))"
	grep -q "guest good: .*complete" "$TV_TMP/$name.err" || fail "$name: the honest guest is not complete"
	n=$("$TV" report "$S" 2>/dev/null | grep -c "^guest:good ")
	[ "$n" -ge 2 ] || fail "$name: $n events of the honest guest in report"
	read -r WALL USER SYS RSS < "$TV_TMP/$name.time"
	echo "$name: record $WALL s wall, $USER + $SYS s CPU, max RSS $RSS KB; honest guest: $n events" >&2
}
want() { [ -z "${COST_CASES:-}" ] || [[ " $COST_CASES " == *" $1 "* ]]; }
under() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# 1. CPU: metadata in linear time.
if want spin; then
run spin meta-spin 5
finish spin
under "$(awk -v u="$USER" -v s="$SYS" 'BEGIN { print u + s }')" 1.0 ||
	fail "spin: record used $USER + $SYS s of CPU for 5 s (empty UST_META frames rescanned?)"
under "$WALL" 15 || fail "spin: record took $WALL s for --duration 5"
fi

# 2. Memory: the guest's metadata budget.
if want mem; then
export COST_PROCS=16
run mem meta-mem 3
finish mem
unset COST_PROCS
under "$RSS" 49152 || fail "mem: record's max RSS $RSS KB for 16 x 4 MiB of UST metadata (budget 16 MiB)"
grep -q 'Traced process cut off: guest=".*/guest-evil", pid=5004, .*more than 16777216 bytes of metadata in all (the limit per guest)' \
	"$TV_TMP/mem.err" || fail "mem: the 5th process was not cut off naming the guest's limit"
grep -q "^status=truncated: .*limit per guest" "$S/ust-guest-evil-5015/meta" || fail "mem: no truncated status"
grep -q "^status=truncated: the agent did not end it" "$S/ust-guest-evil-5000/meta" ||
	fail "mem: the first process, within the budget, was cut off: $(grep status "$S/ust-guest-evil-5000/meta")"
# the summary counts every process announced, and says which were cut off
grep -q "^tracevisor record: guest evil: ust: 16 processes (12 cut off, 4 not ended by the agent), 0 events, 0 lost$" "$TV_TMP/mem.err" ||
	fail "mem: the summary does not count the processes cut off: $(grep 'guest evil: ust' "$TV_TMP/mem.err")"
fi

# 3. Open files: ncpus=1024 under a limit of 1024 (soft and hard).
if want fds; then
run fds ncpus 4 1024
sleep 3
rpid=$(pgrep -f "^$TV record -o $TV_TMP/fds " | head -n 1)
[ -n "$rpid" ] || fail "fds: no recorder process found"
fds=$(ls "/proc/$rpid/fd" 2>/dev/null | wc -l)
finish fds
under "$fds" 300 || fail "fds: record held $fds descriptors with a 1024-CPU guest"
grep -q 'Guest writes more than 64 CPU files: path=".*/guest-evil"' "$TV_TMP/fds.err" ||
	fail "fds: the guest that went past its budget was not named"
expect_eq "fds: guest-evil CPU files" "$(ls "$S/guest-evil" | grep -c '^cpu[0-9]*\.raw$')" 1024
n=$("$TV" report "$S" 2>/dev/null | grep -c "^guest:evil ")
[ "$n" -ge 1025 ] || fail "fds: $n events of the 1024-CPU guest, want one per CPU and more"
echo "fds: $fds descriptors open at 3 s, $n events of the 1024-CPU guest" >&2
fi

# 4. Reader memory: many small UST domains.
if want many; then
run many ust-many 2
finish many
expect_eq "many: UST domains" "$(ls -d "$S"/ust-guest-evil-* | wc -l)" 60
for c in report sync; do
	/usr/bin/time -f "%M" -o "$TV_TMP/many.$c" "$TV" $c "$S" >/dev/null 2>&1 || fail "many: $c failed"
	rss=$(tail -n 1 "$TV_TMP/many.$c")
	under "$rss" 102400 || fail "many: $c took $rss KB for 60 small UST domains"
	echo "many: $c max RSS $rss KB" >&2
done
expect_eq "many: UST events in report" "$("$TV" report "$S" 2>/dev/null | grep -c 'demo:tick')" 6000
fi

# 5. Files made by export: a clock stepping back 10,000 times.
if want back; then
run back clock-back 3
finish back
"$TV" export --format ctf -o "$TV_TMP/back.ctf" "$S" 2>"$TV_TMP/export.err" || { cat "$TV_TMP/export.err"; fail "back: export failed"; }
cat "$TV_TMP/export.err" >&2
files=$(ls "$TV_TMP/back.ctf" | grep -c '^guest-evil_cpu0')
[ "$files" -le 8 ] || fail "back: $files stream files for one guest CPU"
grep -q 'events left out: domain="guest:evil", cpu=0' "$TV_TMP/export.err" || fail "back: no warning naming the stream"
python3 "$TV_ROOT/tests/ctf_tc_check.py" "$TV_TMP/back.ctf" || fail "back: the export breaks Trace Compass's rules"
if command -v babeltrace2 >/dev/null; then
	babeltrace2 "$TV_TMP/back.ctf" >"$TV_TMP/bt.out" 2>"$TV_TMP/bt.err" || { cat "$TV_TMP/bt.err"; fail "back: babeltrace2"; }
	grep -v 'Tracer may have discarded events' "$TV_TMP/bt.err" | grep -q . && { cat "$TV_TMP/bt.err"; fail "back: babeltrace2 stderr"; }
	grep -q 'guest:good\|sched:sched_switch' "$TV_TMP/bt.out" || fail "back: babeltrace2 read no events"
fi
echo "back: $files stream files for the guest CPU whose clock stepped back 10,000 times" >&2
fi

# 6. Files made by export: a traced process of 5,000 thread ids.
if want threads; then
run threads ust-threads 2
finish threads
grep -q "guest evil: ust: 1 processes, 10000 events" "$TV_TMP/threads.err" || fail "threads: the traced process's 10000 records were not recorded"
expect_eq "threads: the traced process's events in report" \
	"$("$TV" report --domain ust-guest-evil-7000 "$S" 2>/dev/null | grep -c 'demo:tick')" 10000
# export's open files: a limit far below the process's 10,000 thread and CPU pairs
( ulimit -n 128 && exec /usr/bin/time -f "%e %M" -o "$TV_TMP/threads.export" \
	"$TV" export --format ctf -o "$TV_TMP/threads.ctf" "$S" ) 2>"$TV_TMP/export.err" ||
	{ cat "$TV_TMP/export.err"; fail "threads: export failed under ulimit -n 128"; }
cat "$TV_TMP/export.err" >&2
read -r ewall erss < "$TV_TMP/threads.export"
tfiles=$(ls "$TV_TMP/threads.ctf" | grep -c '^ust-guest-evil-7000_tid')
cfiles=$(ls "$TV_TMP/threads.ctf" | grep -c '^ust-guest-evil-7000_cpu')
[ "$tfiles" -le 256 ] && [ "$cfiles" -le 2 ] || fail "threads: $tfiles thread and $cfiles CPU stream files for one traced process"
grep -q 'More than 256 thread streams in a traced process: .*subdir="ust-guest-evil-7000"' "$TV_TMP/export.err" ||
	fail "threads: no warning naming the traced process"
under "$erss" 102400 || fail "threads: export's max RSS $erss KB"
python3 "$TV_ROOT/tests/ctf_tc_check.py" "$TV_TMP/threads.ctf" || fail "threads: the export breaks Trace Compass's rules"
if command -v babeltrace2 >/dev/null; then
	babeltrace2 "$TV_TMP/threads.ctf" >"$TV_TMP/bt.out" 2>"$TV_TMP/bt.err" || { cat "$TV_TMP/bt.err"; fail "threads: babeltrace2"; }
	grep -v 'Tracer may have discarded events' "$TV_TMP/bt.err" | grep -q . && { cat "$TV_TMP/bt.err"; fail "threads: babeltrace2 stderr"; }
	# every event kept, each with its own thread (the event context's pid)
	expect_eq "threads: the traced process's events read by babeltrace2" "$(grep -c 'demo:tick' "$TV_TMP/bt.out")" 10000
	expect_eq "threads: its thread ids" "$(grep 'demo:tick' "$TV_TMP/bt.out" | grep -o 'pid = [0-9]*' | sort -u | wc -l)" 5000
fi
echo "threads: $tfiles thread and $cfiles CPU stream files for 5,000 thread ids on 2 CPUs, export $ewall s, max RSS $erss KB under ulimit -n 128" >&2
fi

echo "bounded cost per guest: CPU, memory, open files, reader memory, export files (per CPU, per thread)"
