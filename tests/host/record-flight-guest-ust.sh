#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# record --flight-recorder SIZE --guest SPEC --ust with the real agent on
# this host (its "virtio-serial port" a relayed pty pair, as in
# record-flight-guest.sh) and a "guest" process registered with the agent
# (build/examples/ust-steps on the agent's own TRACEVISOR_UST_SOCK, as in
# guest-agent-ust.sh): while armed, only the process's settings and
# metadata reach DIR/ust-guest-loc-PID/ (no stream data); a snapshot taken
# while the process pauses after step 1 holds, in
# snapshot-1/ust-guest-loc-PID/ (listed in its domains, status snapshot), a
# gap-free tail of its sequence ending exactly at the pause, at most SIZE,
# read by report and stat; Ctrl-C during step 2's pause writes the last
# tail into the session's own ust-guest-loc-PID/, status complete.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
AGENT=$TV_ROOT/build/tracevisor-agent
STEPS=$TV_ROOT/build/examples/ust-steps
[ -x "$AGENT" ] && [ -x "$STEPS" ] || fail "build/tracevisor-agent or build/examples/ust-steps missing (make)"
trap 'kill ${RELAY:-} ${APID:-} ${REC:-} ${WPID:-} 2>/dev/null' EXIT
SIZE=256
N=100000
W=$TV_TMP/w
mkdir -p "$W"
check_tail() {	# REPORT END: guest:loc's demo:tick gap-free, ending at END-1; prints the count
	python3 - "$@" <<'PY'
import re, sys
end = int(sys.argv[2])
seqs = []
for line in open(sys.argv[1]):
    m = re.search(r"^guest:loc .*demo:tick thread=0 seq=(\d+)", line)
    if m:
        seqs.append(int(m.group(1)))
assert seqs, "no guest:loc demo:tick events"
assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), ("gap", [b for a, b in zip(seqs, seqs[1:]) if b != a + 1][:3])
assert seqs[-1] == end - 1, ("ends at", seqs[-1], "not", end - 1)
assert len(seqs) < end, ("not a tail", len(seqs))
print(len(seqs))
PY
}
pty_relay
TRACEVISOR_UST_SOCK="$TV_TMP/guest-ust.sock" "$AGENT" -p 0 -s "$GPTY" -1 -H -v 2>"$TV_TMP/agent.log" &
APID=$!
S=$TV_TMP/s
"$TV" record -o "$S" -e sched:sched_switch --guest "serial:$HPTY,name:loc" \
	--guest-events sched:sched_switch --ust-socket "$TV_TMP/host-ust.sock" --ust 'demo:*' \
	--flight-recorder ${SIZE}K 2>"$TV_TMP/rec.err" &
REC=$!
for _ in $(seq 300); do [ -S "$TV_TMP/guest-ust.sock" ] && break; sleep 0.1; done
[ -S "$TV_TMP/guest-ust.sock" ] || fail "the agent does not listen for traced processes: $(cat "$TV_TMP/agent.log")"
TRACEVISOR_UST_SOCK="$TV_TMP/guest-ust.sock" "$STEPS" $N 2 1 "$W" > "$TV_TMP/steps.out" 2>&1 &
WPID=$!
for _ in $(seq 600); do [ -e "$W/step1" ] && break; sleep 0.1; done
[ -e "$W/step1" ] || fail "step 1 not reached: $(cat "$TV_TMP/steps.out")"
grep -q "Traced processes are streamed\|guests' traced processes are streamed" "$TV_TMP/rec.err" &&
	fail "record still warns that the guests' processes are streamed"
# armed: the process is announced (its metadata), none of its events on disk
D=$(echo "$S"/ust-guest-loc-$WPID)
for _ in $(seq 50); do [ -f "$D/header_page" ] && break; sleep 0.1; done
[ -f "$D/header_page" ] || fail "no $D/header_page (UST_PROC): $(ls "$S")"
bytes=$(cat "$D"/cpu*.ust 2>/dev/null | wc -c)
expect_eq "the guest process's stream bytes on disk before a snapshot" "$bytes" 0
snap=$("$TV" snapshot "$S") || fail "snapshot failed: $(cat "$TV_TMP/rec.err")"
expect_eq "snapshot 1's directory" "$snap" "$(realpath "$S")/snapshot-1"
grep -q "^domains=.*ust-guest-loc-$WPID" "$snap/session.meta" ||
	fail "snapshot 1 does not list ust-guest-loc-$WPID: $(grep domains "$snap/session.meta")"
grep -qx "status=snapshot" "$snap/ust-guest-loc-$WPID/meta" ||
	fail "snapshot 1's process status: $(grep status "$snap/ust-guest-loc-$WPID/meta")"
size=$(cat "$snap/ust-guest-loc-$WPID"/cpu*.ust | wc -c)
[ "$size" -gt 0 ] && [ "$size" -le $((SIZE * 1024)) ] || fail "snapshot 1: the process's $size bytes, want 1..${SIZE} KB"
"$TV" report "$snap" > "$TV_TMP/r1" || fail "report of snapshot 1"
n=$(check_tail "$TV_TMP/r1" $N) || fail "snapshot 1 is not a gap-free tail ending at seq $((N - 1))"
"$TV" stat --json "$snap" > "$TV_TMP/s1" || fail "stat of snapshot 1"
expect_eq "stat count of snapshot 1's guest process" "$(python3 -c "import json,sys; print(sum(r['count'] for r in json.load(open(sys.argv[1])) if r.get('mode')=='ust' and r['reason']=='demo:tick'))" "$TV_TMP/s1")" "$n"
echo "ok: snapshot 1: the guest's process tail, $n events up to seq $((N - 1)), $size bytes <= ${SIZE} KB"
bytes=$(cat "$D"/cpu*.ust 2>/dev/null | wc -c)
expect_eq "the session's guest process stream bytes after the snapshot" "$bytes" 0
touch "$W/go1"
for _ in $(seq 600); do [ -e "$W/step2" ] && break; sleep 0.1; done
[ -e "$W/step2" ] || fail "step 2 not reached: $(cat "$TV_TMP/steps.out")"
kill -INT $REC
wait $REC || fail "record exited $?: $(cat "$TV_TMP/rec.err")"
REC=
wait $APID || fail "agent exited $?: $(cat "$TV_TMP/agent.log")"
APID=
touch "$W/go2"
wait $WPID || fail "ust-steps exited $?: $(cat "$TV_TMP/steps.out")"
WPID=
grep -qx "status=complete" "$D/meta" || fail "the session's guest process: $(grep status "$D/meta")"
grep -q "ust-guest-loc-" "$S/session.meta" || fail "the session does not list its guest process"
"$TV" report "$S" > "$TV_TMP/final" || fail "report of the session"
n=$(check_tail "$TV_TMP/final" $((2 * N))) || fail "the session's last tail is not gap-free up to seq $((2 * N - 1))"
echo "ok: Ctrl-C: the session's ust-guest-loc-* complete, $n events up to seq $((2 * N - 1))"
echo "record --flight-recorder --guest --ust: the guest's processes kept in the guest, in snapshots"
