#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 4 on a real SVM KVM host (the lab's nested L1) with a Linux L2:
# tracevisor-agent runs in L2 under a workload; L1 records its kvm events
# and L2's kernel events at once, first over vsock, then over the
# virtio-serial port (L1 end: lab-guest's unix socket).  Each session is
# checked here with this host's tracevisor: both domains decode, L1's
# kvm_exit events are attributed to L2's vCPU thread, message probes match
# on both sides, hypercall probes match by sequence number (guest markers
# vs host kvm_hypercall).
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || skip "build/tracevisor-agent not built (make)"

L2_SCRIPT=$L2_AGENT_SCRIPT

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
echo "L2 up after ${n}s, qemu pid $QPID"
tracevisor record -o /out/vsock --guest vsock:3,pid:$QPID,name:l2 --duration 10 \
	>/out/vsock.log 2>&1
echo $? >/out/vsock.status
tracevisor record -o /out/serial --guest serial:/run/lab-guest/3/serial.sock,pid:$QPID,name:l2s \
	--duration 8 >/out/serial.log 2>&1
echo $? >/out/serial.status
touch /tmp/l2/done
lab-guest --wait $QPID
echo $? >/out/l2.status
cp /tmp/l2/agent.log /tmp/l2/console.log /out/ 2>/dev/null
exit 0' guest-kvm LAB_TIMEOUT=900
expect_rc 0 "L1 script"
cat "$OUT/vsock.log" "$OUT/serial.log" >&2
[ "$(cat "$OUT/vsock.status")" = 0 ] || fail "record over vsock exited $(cat "$OUT/vsock.status")"
[ "$(cat "$OUT/serial.status")" = 0 ] || fail "record over virtio-serial exited $(cat "$OUT/serial.status")"

check() {	# SESSION GUEST LABEL
	local fig
	fig=$(python3 "$REPO/tests/e2e/guest_check.py" "$TV" "$1" "$2" --status complete \
		--min-guest-events 1000 --min-pings 10 --min-hcalls 5 --min-vcpu-exits 100 \
		--max-bytes-per-event 300) ||
		fail "$3 session: $fig"
	echo "ok: $3: $fig" >&2
	"$TV" stat "$1" >"$T/$2.stat" || fail "$3: stat failed"
	grep -q "^$2\[" "$T/$2.stat" || { cat "$T/$2.stat" >&2; fail "$3: stat has no rows for VM $2"; }
	head -n 12 "$T/$2.stat" >&2
}
check "$OUT/vsock" l2 vsock
check "$OUT/serial" l2s virtio-serial
echo "PASS: host + guest recording on nested SVM KVM over vsock and virtio-serial" >&2
