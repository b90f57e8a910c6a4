# SPDX-License-Identifier: GPL-2.0
# record --flight-recorder SIZE --trigger 'event=SYSTEM:EVENT,filter=FILTER':
# a host event (filtered in the kernel) makes a snapshot --post after it,
# holding the events up to the trigger and those of the post, with the
# trigger in its session.meta (trigger=, trigger_time=, trigger_event=,
# trigger_cpu=) and marked by report; --trigger-holdoff and --max-snapshots
# refuse the next triggers, each refusal said in one line; bad rules and
# options are refused before anything is created; the trigger's own
# tracefs instance is gone at the end.  A worker process of this test
# makes the syscalls: getpid fires, getppid is the bulk.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
S=$TV_TMP/s
syscall_worker
wait_file() {	# PATH SECONDS
	for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}
# bad input: one line, non-zero, nothing created
bad() {	# NAME WANT ARGS...
	local name=$1 want=$2
	shift 2
	"$TV" record -o "$TV_TMP/bad" "$@" -- true > /dev/null 2> "$TV_TMP/bad.err" && fail "$name: exit 0"
	grep -q -- "$want" "$TV_TMP/bad.err" || fail "$name: no '$want' in: $(cat "$TV_TMP/bad.err")"
	[ -e "$TV_TMP/bad" ] && fail "$name: left $TV_TMP/bad"
	echo "ok: $name: $(head -1 "$TV_TMP/bad.err")"
}
bad "--trigger without --flight-recorder" "need --flight-recorder" --trigger 'event=sched:sched_switch'
bad "rule of no kind" "a rule is event=" --flight-recorder 1M --trigger 'sched:sched_switch'
bad "event rule with a glob" "one SYSTEM:EVENT" --flight-recorder 1M --trigger 'event=sched:*'
bad "exit rule without unit" "needs a duration with its unit" --flight-recorder 1M --trigger 'exit-latency>200'
bad "exit rule, unknown reason" "unknown exit reason" --flight-recorder 1M --trigger 'exit-latency>1ms,reason=nosuch'
bad "exit rule, unknown key" "only vm=NAME and reason=REASON" --flight-recorder 1M --trigger 'exit-latency>1ms,cpu=1'
bad "--post without unit" "Invalid --post" --flight-recorder 1M --trigger 'event=sched:sched_switch' --post 5
bad "--max-snapshots 0" "invalid --max-snapshots" --flight-recorder 1M --trigger 'event=sched:sched_switch' --max-snapshots 0
"$TV" record -o "$TV_TMP/bad2" --flight-recorder 1M --trigger 'event=nosuch:nothing' -- true 2> "$TV_TMP/bad2.err" &
bad_pid=$!
wait $bad_pid && fail "unknown trigger event: exit 0"
grep -q 'no such event nosuch:nothing' "$TV_TMP/bad2.err" || fail "unknown trigger event: $(cat "$TV_TMP/bad2.err")"
[ -e "$TV_TMP/bad2" ] && fail "unknown trigger event: left $TV_TMP/bad2"
# its own trigger instance removed (other recorders' are theirs)
ls -d "$TRACEFS/instances/tracevisor-trig-$bad_pid-"* 2>/dev/null &&
	fail "unknown trigger event: its instance tracevisor-trig-$bad_pid-N left"
# a killed recorder's trigger instance: the next recorder removes it
mkdir "$TRACEFS/instances/tracevisor-trig-$bad_pid-9" || fail "cannot make a stand-in trigger instance"
"$TV" record -q -o "$TV_TMP/next" -e sched:sched_switch -- true 2>/dev/null || fail "record after a dead trigger instance failed"
[ -e "$TRACEFS/instances/tracevisor-trig-$bad_pid-9" ] &&
	{ rmdir "$TRACEFS/instances/tracevisor-trig-$bad_pid-9"; fail "a dead recorder's trigger instance was not removed by the next record"; }
echo "ok: unknown trigger event: $(grep 'no such event' "$TV_TMP/bad2.err")"

"$TV" record -o "$S" -f "common_pid==$worker" -e syscalls:sys_enter_getppid -e syscalls:sys_enter_getpid \
	--flight-recorder 1M --trigger "event=syscalls:sys_enter_getpid,filter=common_pid==$worker" \
	--post 300ms --trigger-holdoff 3s --max-snapshots 2 2> "$TV_TMP/rec.err" &
rec=$!
wait_tracing "$rec"
# armed once record says it records (the trigger's instance comes last)
for _ in $(seq 300); do grep -q "recording to" "$TV_TMP/rec.err" && break; sleep 0.1; done
ls "$TRACEFS/instances" | grep -q "^tracevisor-trig-$rec-0$" || fail "no trigger instance tracevisor-trig-$rec-0"
ask BULK 1000
# the trigger, then 2000 getppid within the 300 ms post
ask BOTH 2000
wait_file "$S/snapshot-1/session.meta" 10 || fail "no snapshot after the trigger: $(cat "$TV_TMP/rec.err")"
grep -q "^tracevisor record: trigger fired: trigger=event=syscalls:sys_enter_getpid,filter=common_pid==$worker .*; writing the snapshot$" \
	"$TV_TMP/rec.err" || fail "no 'trigger fired' line before the snapshot: $(cat "$TV_TMP/rec.err")"
# at once, within the holdoff: refused, said
ask MARK 1
for _ in $(seq 30); do grep -q 'trigger not taken (holdoff)' "$TV_TMP/rec.err" && break; sleep 0.1; done
grep -q '1 trigger not taken (holdoff)' "$TV_TMP/rec.err" || fail "no holdoff line: $(cat "$TV_TMP/rec.err")"
echo "ok: a trigger within the holdoff is refused in one line"
M=$S/snapshot-1/session.meta
expect_eq "trigger=" "$(sed -n 's/^trigger=//p' "$M")" "event=syscalls:sys_enter_getpid,filter=common_pid==$worker"
expect_eq "trigger_event=" "$(sed -n 's/^trigger_event=//p' "$M")" "syscalls:sys_enter_getpid"
grep -q '^trigger_cpu=[0-9]' "$M" || fail "no trigger_cpu in $(cat "$M")"
"$TV" report "$S/snapshot-1" > "$TV_TMP/r1" || fail "report of snapshot 1"
expect_eq "snapshot 1: bulk before and during the post" "$(grep -c sys_enter_getppid "$TV_TMP/r1")" 3000
expect_eq "snapshot 1: report marks the trigger once" "$(grep -c '^  ^ trigger: event=syscalls:sys_enter_getpid' "$TV_TMP/r1")" 1
grep -B1 '^  ^ trigger:' "$TV_TMP/r1" | head -1 | grep -q 'syscalls:sys_enter_getpid' ||
	fail "the mark follows no getpid line: $(grep -B1 '^  ^ trigger:' "$TV_TMP/r1")"
# trigger_time is the event's own time (from the trigger's instance: within 1 ms)
python3 - "$M" "$TV_TMP/r1" <<'PY' || fail "trigger_time is not the marked event's time"
import re, sys
meta = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if "=" in l)
lines = open(sys.argv[2]).read().split("\n")
i = next(k for k, l in enumerate(lines) if l.startswith("  ^ trigger:"))
sec, frac = re.search(r"\] (\d+)\.(\d+):", lines[i - 1]).groups()
ts = int(sec) * 10**9 + int(frac.ljust(9, "0"))
assert abs(ts - int(meta["trigger_time"])) < 10**6, (ts, meta["trigger_time"])
PY
"$TV" report --json "$S/snapshot-1" | grep -c '"trigger":"event=syscalls' | grep -qx 1 || fail "report --json: no trigger mark"
"$TV" stat "$S/snapshot-1" > /dev/null || fail "stat of snapshot 1"
echo "ok: snapshot 1: the trigger, its post, its keys, marked by report"
sleep 3.2
ask MARK 1
wait_file "$S/snapshot-2/session.meta" 10 || fail "no snapshot 2 after the holdoff: $(cat "$TV_TMP/rec.err")"
sleep 3.2
ask MARK 1
for _ in $(seq 30); do grep -q 'trigger not taken (max-snapshots)' "$TV_TMP/rec.err" && break; sleep 0.1; done
grep -q '1 trigger not taken (max-snapshots)' "$TV_TMP/rec.err" || fail "no max-snapshots line: $(cat "$TV_TMP/rec.err")"
[ -e "$S/snapshot-3" ] && fail "a third snapshot past --max-snapshots 2"
echo "ok: --max-snapshots 2: the third trigger refused in one line"
expect_eq "flight-recorder state: snapshots" "$(sed -n 's/^snapshots=//p' "$S/flight-recorder")" 2
kill -INT "$rec"
wait "$rec" || fail "record exited $?: $(cat "$TV_TMP/rec.err")"
ls "$TRACEFS/instances" | grep -q "^tracevisor-trig-$rec-" && fail "trigger instance left"
instance_left "$rec" && fail "tracefs instance tracevisor-$rec left"
ask QUIT 0
echo "PASS: host event triggers"
