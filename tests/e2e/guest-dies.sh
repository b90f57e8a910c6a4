#!/bin/bash
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 4: a guest that dies mid-recording, beside one that does not.  L1
# records kvm events and two L2 guests' agents over vsock (CIDs 3 and 4);
# once they stream, L1 kills the first L2's qemu (-9).  The recording must
# go on to its end and leave a valid host trace (kvm_exit attributed to
# each L2's vCPU), a stream of the dead guest whose meta says truncated and
# which still decodes up to the kill, and a complete stream, with its sync
# probes, of the other guest.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || skip "build/tracevisor-agent not built (make)"

run_lab kvm '
PATH=/opt/tracevisor:$PATH
cat >/tmp/l2.sh <<"EOF"
tracevisor-agent -v >/out/agent.log 2>&1 &
sleep 1
touch /out/agent.started
while :; do dd if=/dev/zero of=/dev/null bs=4k count=200 2>/dev/null; sleep 0.05; done
EOF
QPID=$(lab-guest --background --cid 3 --timeout 400 /tmp/l2.sh /tmp/l2) || exit 20
Q2=$(lab-guest --background --cid 4 --timeout 400 /tmp/l2.sh /tmp/l2b) || exit 20
n=0
while [ ! -e /tmp/l2/agent.started ] || [ ! -e /tmp/l2b/agent.started ]; do
	[ $n -lt 240 ] || { echo "L2 agents did not start"; exit 21; }
	sleep 1
	n=$((n + 1))
done
tracevisor record -o /out/dies --guest vsock:3,pid:$QPID,name:l2 --guest-buffer 256 \
	--guest vsock:4,pid:$Q2,name:l2b --duration 30 >/out/dies.log 2>&1 &
R=$!
n=0
while [ ! -e /out/dies/guest-l2/header_page ] && [ $n -lt 60 ]; do sleep 1; n=$((n + 1)); done
sleep 5
kill -9 $QPID && echo "killed L2 qemu $QPID $((n + 5)) s into the recording"
wait $R
echo $? >/out/dies.status
lab-guest --wait $QPID 2>/dev/null
kill $Q2
lab-guest --wait $Q2 2>/dev/null
exit 0' guest-dies LAB_TIMEOUT=900
expect_rc 0 "L1 script"
cat "$OUT/dies.log" >&2
S=$OUT/dies
[ "$(cat "$OUT/dies.status")" = 0 ] || fail "record exited $(cat "$OUT/dies.status") when the guest died"
grep -q "^status=truncated: guest channel closed" "$S/guest-l2/meta" ||
	fail "guest meta: $(grep '^status=' "$S/guest-l2/meta")"
grep -q "guest l2: .*truncated" "$OUT/dies.log" || fail "record did not report the truncated guest"
fig=$(python3 "$REPO/tests/e2e/guest_check.py" "$TV" "$S" l2 --status truncated \
	--min-guest-events 100 --min-pings 3 --min-vcpu-exits 100) || fail "session check: $fig"
"$TV" stat "$S" >"$T/stat" || fail "stat failed on the session with a dead guest"
grep -q "^l2\[" "$T/stat" || fail "stat has no rows for VM l2"
fig2=$(python3 "$REPO/tests/e2e/guest_check.py" "$TV" "$S" l2b --status complete \
	--min-guest-events 100 --min-pings 10 --min-hcalls 10 --min-vcpu-exits 100) ||
	fail "the surviving guest: $fig2"
grep -q "^l2b\[" "$T/stat" || fail "stat has no rows for VM l2b"
echo "PASS: guest killed mid-recording: host trace valid, guest stream truncated and decodable: $fig" >&2
echo "PASS: the other guest went on: $fig2" >&2
