# SPDX-License-Identifier: GPL-2.0
# record --flight-recorder SIZE --guest SPEC with the real agent on this
# host (its "virtio-serial port" a relayed pty pair, as in
# guest-agent-local.sh): the agent keeps the guest's ring (nothing of the
# guest's events on disk before a snapshot); a snapshot holds the guest's
# newest events as domain guest-loc, at most SIZE, read by report, stat,
# sync and export; a guest=NAME:SYSTEM:EVENT trigger evaluated by the
# agent fires one snapshot whose session.meta names it, and more hits
# within --trigger-holdoff are refused; a frozen agent (SIGSTOP) is
# written truncated within ~2 s, the host's layer whole.  Then fake agents
# (tests/host/flight_fake_agent.py): one of version 3 gets the guest failed
# with a clear line; a lying one that sends 4 x SIZE is cut at SIZE
# (counted and said) and its TRIGGER flood takes one snapshot; a slow one
# (a ring of megabytes with pauses of 3 s) comes whole, one that stops
# midway or drips is cut and said.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
[ -x "$AGENT" ] || fail "build/tracevisor-agent missing (make)"
FAKE=$TV_ROOT/tests/host/flight_fake_agent.py
trap 'kill ${RELAY:-} ${APID:-} ${REC:-} ${worker:-} 2>/dev/null; kill -CONT ${APID:-} 2>/dev/null' EXIT
syscall_worker
count() {	# REPORT EVENT: the guest's lines of EVENT
	grep -c "^guest:loc .*syscalls:$2" "$1" || true
}
wait_file() {	# FILE SECONDS
	for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}
guest_ready() {	# LOG: the agent traces (its READY went out)
	for _ in $(seq 300); do grep -q "Tracing .* events" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "agent not tracing within 30 s: $(cat "$1")"
}
SIZE=256
# armed TAG DIR RECORD-OPTIONS...: the real agent on a fresh pty pair (its
# log $TV_TMP/agentTAG.log, pid APID) and a flight recorder of it as guest
# loc, the worker's syscalls only (stderr $TV_TMP/recTAG.err, pid REC),
# once the agent traces
armed() {
	local tag=$1 dir=$2
	shift 2
	rm -f "$TV_TMP/ptys"; pty_relay
	"$AGENT" -p 0 -s "$GPTY" -1 -H -v 2>"$TV_TMP/agent$tag.log" &
	APID=$!
	"$TV" record -o "$dir" -e sched:sched_switch --guest "serial:$HPTY,name:loc" \
		--guest-events syscalls:sys_enter_getppid,syscalls:sys_enter_getpid -f "common_pid==$worker" \
		--flight-recorder ${SIZE}K "$@" 2>"$TV_TMP/rec$tag.err" &
	REC=$!
	guest_ready "$TV_TMP/agent$tag.log"
}

# 1. On request: nothing of the guest on disk, then its tail in snapshot-1.
S=$TV_TMP/s
armed "" "$S" --sync-interval 0.2
ask BULK 200000
ask MARK 7
bytes=$(cat "$S"/guest-loc/cpu*.raw 2>/dev/null | wc -c)
expect_eq "guest bytes on disk before a snapshot" "$bytes" 0
sleep 1	# sync probes after the markers
snap=$("$TV" snapshot "$S") || fail "snapshot failed: $(cat "$TV_TMP/rec.err")"
expect_eq "snapshot 1's directory" "$snap" "$(realpath "$S")/snapshot-1"
grep -qx "domains=host,guest-loc" "$snap/session.meta" || fail "snapshot 1: domains: $(cat "$snap/session.meta")"
grep -qx "status=complete" "$snap/guest-loc/meta" || fail "snapshot 1: guest status: $(grep status "$snap/guest-loc/meta")"
"$TV" report "$snap" > "$TV_TMP/r1" || fail "report of snapshot 1"
expect_eq "snapshot 1: the guest's newest events (markers)" "$(count "$TV_TMP/r1" sys_enter_getpid)" 7
bulk=$(count "$TV_TMP/r1" sys_enter_getppid)
[ "$bulk" -gt 1000 ] && [ "$bulk" -lt 200000 ] || fail "snapshot 1: $bulk guest getppid records, want a tail (1000..199999)"
size=$(cat "$snap"/guest-loc/cpu*.raw | wc -c)
[ "$size" -le $((SIZE * 1024)) ] || fail "snapshot 1: the guest sent $size bytes > ${SIZE} KB"
gap=$(sed -n 's/^flight_gap_ns=//p' "$snap/guest-loc/meta")
[ "${gap:-0}" -gt 0 ] || fail "no flight_gap_ns in the guest's meta"
echo "ok: snapshot 1: guest tail $bulk of 200000 getppid + 7 markers, $size bytes <= ${SIZE} KB, gap $gap ns"
# its first frame one sub-buffer: a guest whose VMM stalled answers at once
sb=$(sed -n 's/^subbuf_size=//p' "$snap/guest-loc/meta")
grep -q "^tracevisor-agent: Snapshot 1: .*(first frame ${sb:-none} bytes at" "$TV_TMP/agent.log" ||
	fail "the agent's first snapshot frame is not one sub-buffer ($sb bytes): $(grep 'Snapshot 1' "$TV_TMP/agent.log")"
"$TV" stat --domain guest:loc "$snap" > "$TV_TMP/s1" || fail "stat of snapshot 1's guest"
n=$(sed -n 's/.*: \([0-9]*\) events, .*/\1/p' "$TV_TMP/s1")
[ "${n:-0}" -gt 1000 ] || fail "stat --domain guest:loc of snapshot 1: '$(head -1 "$TV_TMP/s1")'"
"$TV" sync "$snap" > "$TV_TMP/y1" 2>&1 || fail "sync of snapshot 1: $(cat "$TV_TMP/y1")"
line=$(grep "^guest-loc " "$TV_TMP/y1") || fail "sync: no line for guest-loc: $(cat "$TV_TMP/y1")"
caus=$(awk '{print $NF}' <<<"$line")
case $caus in 0/[1-9]*) ;; *) fail "sync of the snapshot: guest-loc causality '$caus' (want 0 violations of >0 checks)" ;; esac
"$TV" export --format perfetto -q -o "$TV_TMP/p1" "$snap" || fail "export of snapshot 1"
echo "ok: snapshot 1 read by report, stat, sync ($caus), export"

# 2. A frozen agent: written truncated within ~2 s, the host whole.
kill -STOP $APID
t0=$(date +%s%N)
snap=$("$TV" snapshot "$S") || fail "snapshot with a frozen agent failed: $(cat "$TV_TMP/rec.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT $APID
[ $ms -lt 4000 ] || fail "snapshot with a frozen agent took $ms ms (want ~2000)"
[ $ms -ge 1900 ] || fail "snapshot with a frozen agent took $ms ms: did it wait for the guest at all?"
grep -q "^status=truncated: no SNAP_END from the agent within 2 s" "$snap/guest-loc/meta" ||
	fail "frozen agent's meta: $(grep status "$snap/guest-loc/meta")"
grep -qx "truncated=1" "$snap/guest-loc/meta" || fail "no truncated=1 key"
grep -qx "domains=host,guest-loc" "$snap/session.meta" || fail "snapshot 2: domains: $(cat "$snap/session.meta")"
grep -q "Guest loc: snapshot truncated: no SNAP_END" "$TV_TMP/rec.err" || fail "no line saying the guest is truncated: $(cat "$TV_TMP/rec.err")"
[ "$(grep -c "Guest loc: snapshot truncated" "$TV_TMP/rec.err")" = 1 ] || fail "the truncation said more than once"
"$TV" report "$snap" > /dev/null || fail "report of the truncated snapshot"
echo "ok: a frozen agent: snapshot in $ms ms, guest-loc truncated, said in one line"
kill -INT $REC
wait $REC
rc=$?
[ $rc = 0 ] || fail "record exited $rc: $(cat "$TV_TMP/rec.err")"
wait $APID || fail "agent exited $?"
grep -q "^status=complete" "$S/guest-loc/meta" || fail "session's guest: $(grep status "$S/guest-loc/meta")"
# the guest's ring turned over by design: overwritten, not lost (as the host's)
over=$(sed -n 's/^overwritten_total=//p' "$S/guest-loc/meta")
[ "${over:-0}" -gt 100000 ] || fail "the guest's turnover not counted as overwritten: '$over'"
expect_eq "the guest's losses in the session (overwritten apart)" "$(sed -n 's/^lost_total=//p' "$S/guest-loc/meta")" 0
# the frozen agent's answer came after its snapshot was written: dropped, counted
late=$(sed -n 's/^snapshot_late_bytes=//p' "$S/guest-loc/meta")
[ "${late:-0}" -gt 0 ] || fail "the frozen agent's late answer not counted: snapshot_late_bytes='$late'"
echo "ok: Ctrl-C: the guest's last buffers in the session, complete (late snapshot bytes dropped: $late)"
ls /sys/kernel/tracing/instances | grep -q "^tracevisor-agent-$APID" && fail "agent's instances left behind"
kill $RELAY

# 3. A guest= trigger: one snapshot naming it; hits within the holdoff refused.
S3=$TV_TMP/s3
armed 3 "$S3" --trigger "guest=loc:syscalls:sys_enter_getpid,filter=common_pid==$worker" \
	--trigger-holdoff 4s --post 100ms
sleep 0.5	# armed after the guests are ready
ask BULK 1000
t0=$(date +%s%N)
ask MARK 1
wait_file "$S3/snapshot-1/session.meta" 5 || fail "no snapshot 5 s after the guest's trigger event: $(cat "$TV_TMP/rec3.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
m=$S3/snapshot-1/session.meta
grep -qx "trigger=guest=loc:syscalls:sys_enter_getpid,filter=common_pid==$worker" "$m" || fail "trigger key: $(cat "$m")"
grep -qx "trigger_guest=loc" "$m" || fail "no trigger_guest=loc: $(cat "$m")"
grep -qx "trigger_event=syscalls:sys_enter_getpid" "$m" || fail "no trigger_event"
tt=$(sed -n 's/^trigger_time=//p' "$m")
[ "${tt:-0}" -gt 0 ] || fail "no trigger_time"
"$TV" report "$S3/snapshot-1" > "$TV_TMP/r3" || fail "report of the triggered snapshot"
expect_eq "triggered snapshot: the guest's trigger event" "$(count "$TV_TMP/r3" sys_enter_getpid)" 1
# trace_pipe's text stamps have microseconds, and the rule's instance stamps the
# event on its own (a few us apart): within 50 us
ev=$(sed -n 's/^guest:loc .* \([0-9]*\)\.\([0-9]\{9\}\): syscalls:sys_enter_getpid.*/\1\2/p' "$TV_TMP/r3")
d=$((tt - 10#$ev))
[ ${d#-} -le 50000 ] || fail "the trigger_time $tt is not the guest event's time stamp $ev"
echo "ok: guest trigger: snapshot-1 in $ms ms, trigger_time=$tt is the guest event's"
# report marks the guest's event that fired, on the line after it
grep -A1 "^guest:loc .*syscalls:sys_enter_getpid" "$TV_TMP/r3" | grep -q "^  ^ trigger: guest=loc:syscalls:sys_enter_getpid" ||
	fail "report does not mark the guest's trigger event: $(grep -c '\^ trigger' "$TV_TMP/r3") mark(s)"
echo "ok: report marks the guest's trigger event"
ask MARK 1
ask MARK 1
sleep 1.5
[ -e "$S3/snapshot-2" ] && fail "a second snapshot within the holdoff"
grep -q "trigger.* not taken (holdoff)" "$TV_TMP/rec3.err" || fail "the holdoff refusals not said: $(cat "$TV_TMP/rec3.err")"
echo "ok: hits within --trigger-holdoff refused: $(grep -c 'not taken' "$TV_TMP/rec3.err") line(s)"
kill -INT $REC
wait $REC || fail "record exited $?: $(cat "$TV_TMP/rec3.err")"
wait $APID
kill $RELAY

# 4. Fake agents: an old one, and a lying one.
rm -f "$TV_TMP/ptys"; pty_relay
python3 "$FAKE" "$GPTY" old 2>"$TV_TMP/fake-old.log" &
APID=$!
S4=$TV_TMP/s4
"$TV" record -o "$S4" -e sched:sched_switch --guest "serial:$HPTY,name:old" --flight-recorder ${SIZE}K \
	--duration 2 2>"$TV_TMP/rec4.err"
rc=$?
[ $rc = 3 ] || fail "record with an old agent exited $rc, want 3: $(cat "$TV_TMP/rec4.err")"
grep -q "guest old failed: guest agent version 3 cannot keep its ring\|the agent (version 3) cannot keep its ring for a flight recorder" "$TV_TMP/rec4.err" ||
	fail "the old agent not said: $(cat "$TV_TMP/rec4.err")"
echo "ok: an old agent: $(grep -m1 'version 3' "$TV_TMP/rec4.err")"
kill $APID $RELAY 2>/dev/null
wait $APID 2>/dev/null

rm -f "$TV_TMP/ptys"; pty_relay
python3 "$FAKE" "$GPTY" liar 2>"$TV_TMP/fake-liar.log" &
APID=$!
S5=$TV_TMP/s5
"$TV" record -o "$S5" -e sched:sched_switch --guest "serial:$HPTY,name:liar" --flight-recorder ${SIZE}K \
	--trigger "guest=liar:sched:sched_switch" --trigger-holdoff 30s --post 10ms --duration 6 2>"$TV_TMP/rec5.err"
rc=$?
grep -q "^guest-liar" <(ls "$S5/snapshot-1") || fail "no snapshot of the lying guest: $(cat "$TV_TMP/rec5.err")"
[ -e "$S5/snapshot-2" ] && fail "the TRIGGER flood took more than one snapshot"
m=$S5/snapshot-1/guest-liar/meta
got=$(cat "$S5"/snapshot-1/guest-liar/cpu*.raw | wc -c)
[ "$got" -le $((SIZE * 1024)) ] || fail "the liar got $got bytes written > ${SIZE} KB"
dropped=$(sed -n 's/^snapshot_bytes_dropped=//p' "$m")
[ "${dropped:-0}" -ge $((3 * SIZE * 1024)) ] || fail "snapshot_bytes_dropped=$dropped, want >= 3 x SIZE"
grep -q "^status=truncated: the agent sent more than the flight recorder's $((SIZE * 1024)) bytes" "$m" ||
	fail "liar's status: $(grep status "$m")"
grep -q "Guest liar: snapshot truncated: the agent sent more than" "$TV_TMP/rec5.err" || fail "the cut not said: $(cat "$TV_TMP/rec5.err")"
trig=$(sed -n 's/^triggers=//p' "$m")
[ "${trig:-0}" -ge 100 ] || fail "the TRIGGER flood not counted: triggers=$trig"
lines=$(grep -c "not taken" "$TV_TMP/rec5.err")
[ "$lines" -le 6 ] || fail "the TRIGGER flood made $lines refusal lines (at most one a second)"
echo "ok: a lying guest: $lines refusal line(s), $got bytes written, $dropped dropped and said; $trig TRIGGERs, one snapshot"
kill $APID $RELAY 2>/dev/null
# 5. A slow channel (tests/host/flight_fake_agent.py slow): a guest that
# answers and keeps sending, pausing 3 s now and then, 3 MB over ~12 s,
# comes whole; one that stops midway is cut 5 s after its last data, one
# that drips a page every 3 s about 10 s after the request.
rm -f "$TV_TMP/ptys"; pty_relay
python3 "$FAKE" "$GPTY" slow 2>"$TV_TMP/fake-slow.log" &
APID=$!
S6=$TV_TMP/s6
"$TV" record -o "$S6" -e sched:sched_switch --guest "serial:$HPTY,name:slow" --flight-recorder 4M \
	2>"$TV_TMP/rec6.err" &
REC=$!
for _ in $(seq 300); do grep -q "recording to" "$TV_TMP/rec6.err" && break; sleep 0.1; done
grep -q "recording to" "$TV_TMP/rec6.err" || fail "record with the slow fake agent did not start: $(cat "$TV_TMP/rec6.err")"
slow_snap() {	# N STATUS-PREFIX BYTES MIN-MS MAX-MS
	local t0 ms m got
	t0=$(date +%s%N)
	"$TV" snapshot "$S6" >/dev/null || fail "snapshot $1 of the slow guest: $(cat "$TV_TMP/rec6.err")"
	ms=$((($(date +%s%N) - t0) / 1000000))
	m=$S6/snapshot-$1/guest-slow/meta
	[ -e "$m" ] || fail "snapshot $1 without the slow guest: $(cat "$TV_TMP/rec6.err")"
	grep -q "^status=$2" "$m" || fail "snapshot $1 of the slow guest: $(grep '^status=' "$m"), want $2"
	got=$(sed -n 's/^bytes_total=//p' "$m")
	expect_eq "snapshot $1 of the slow guest: bytes" "$got" "$3"
	[ $ms -ge "$4" ] && [ $ms -le "$5" ] || fail "snapshot $1 of the slow guest took $ms ms (want $4..$5)"
	echo "ok: snapshot $1 of the slow guest: $(grep '^status=' "$m" | cut -c8-80), $got bytes, $ms ms"
}
slow_snap 1 complete $((48 * 65536)) 11000 20000
slow_snap 2 "truncated: no SNAP_END from the agent, its data stopped for 5 s" $((16 * 65536)) 4500 8000
slow_snap 3 "truncated: no SNAP_END from the agent within 10 s of the request" $((4 * 4096)) 9500 13000
# its last pages (late: counted) before the stop, which it then answers
for _ in $(seq 150); do grep -q "(3)" "$TV_TMP/fake-slow.log" && break; sleep 0.1; done
kill -INT $REC
wait $REC || fail "record with the slow fake agent exited $?: $(cat "$TV_TMP/rec6.err")"
kill $APID $RELAY 2>/dev/null
ask QUIT 0
echo "PASS: guests in the flight recorder"
