#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 4: a guest that dies mid-recording.  L1 records kvm events and the
# L2 agent's stream over vsock; once L2 streams, L1 kills L2's qemu (-9).
# The recording must go on to its end and leave a valid host trace (with
# kvm_exit attributed to L2's vCPU until it died) and a guest stream whose
# meta says truncated, and which still decodes up to the kill.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || skip "build/tracevisor-agent not built (make)"

L2_SCRIPT=$L2_AGENT_START'
while :; do dd if=/dev/zero of=/dev/null bs=4k count=200 2>/dev/null; sleep 0.05; done'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/dies --guest vsock:3,pid:$QPID,name:l2 --guest-buffer 256 \
	--duration 25 >/out/dies.log 2>&1 &
R=$!
n=0
while [ ! -e /out/dies/guest-l2/header_page ] && [ $n -lt 60 ]; do sleep 1; n=$((n + 1)); done
sleep 5
kill -9 $QPID && echo "killed L2 qemu $QPID $((n + 5)) s into the recording"
wait $R
echo $? >/out/dies.status
lab-guest --wait $QPID 2>/dev/null
exit 0' guest-dies LAB_TIMEOUT=900
expect_rc 0 "L1 script"
cat "$OUT/dies.log" >&2
S=$OUT/dies
# recorded, a guest incomplete: 3 (tracevisor-record(1), EXIT STATUS)
[ "$(cat "$OUT/dies.status")" = 3 ] || fail "record exited $(cat "$OUT/dies.status") when the guest died, want 3"
grep -q "^status=truncated: guest channel closed" "$S/guest-l2/meta" ||
	fail "guest meta: $(grep '^status=' "$S/guest-l2/meta")"
grep -q "guest l2: .*truncated" "$OUT/dies.log" || fail "record did not report the truncated guest"
fig=$(python3 "$REPO/tests/e2e/guest_check.py" "$TV" "$S" l2 --status truncated \
	--min-guest-events 100 --min-pings 3 --min-vcpu-exits 100) || fail "session check: $fig"
"$TV" stat "$S" >"$T/stat" || fail "stat failed on the session with a dead guest"
grep -q "^l2\[" "$T/stat" || fail "stat has no rows for VM l2"
echo "PASS: guest killed mid-recording: host trace valid, guest stream truncated and decodable: $fig" >&2
