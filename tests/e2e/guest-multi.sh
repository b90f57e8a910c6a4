#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 4 with two guests at once on the lab's nested SVM KVM host: two L2
# guests (vsock CIDs 3 and 4, hostnames l2-a and l2-b) run tracevisor-agent
# under a workload; L1 records its kvm events and both guests' kernels in
# one session.  Checked here with this host's tracevisor:
#   1. both guests recorded to the end: each guest-NAME/ holds its own
#      guest's events (hostname), host/vcpus and the kernel's saved_tgids put
#      each VM's vCPU threads in its own qemu process, kvm_exit events on
#      both, message and hypercall probes matched per guest by its index and
#      sequence numbers (none mixed), `tracevisor sync` exact (x86-tsc trace
#      clock, each VM's own TSC offsets) for both with 0 probe causality
#      violations and its guest events inside its own VM's vCPU guest-mode
#      intervals (up to 0.1%);
#   2. guest b's qemu killed (-9) mid-recording: record still exits 0, b's
#      stream says truncated, a's stream is complete, and a's vCPUs and
#      kernel keep being recorded for seconds after b's last exit.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || skip "build/tracevisor-agent not built (make)"

L1_SCRIPT='
PATH=/opt/tracevisor:$PATH
cat >/tmp/l2.sh <<"EOF"
'"$L2_AGENT_SCRIPT"'
EOF
for g in a b; do { echo "hostname l2-$g"; cat /tmp/l2.sh; } >/tmp/l2-$g.sh; done
# Both at once, on the one vCPU of L1 (tests/lab/README.md, L1 freezes)
Q1=$(lab-guest --background --cid 3 --timeout 400 /tmp/l2-a.sh /tmp/l2a) || exit 20
Q2=$(lab-guest --background --cid 4 --timeout 400 /tmp/l2-b.sh /tmp/l2b) || exit 21
echo "$Q1 $Q2" >/out/qemu.pids
n=0
while { [ ! -e /tmp/l2a/agent.started ] || [ ! -e /tmp/l2b/agent.started ]; } && [ $n -lt 240 ]; do
	sleep 1; n=$((n + 1))
done
[ -e /tmp/l2a/agent.started ] && [ -e /tmp/l2b/agent.started ] || { echo "L2 agents did not start"; exit 22; }
echo "both L2 agents up after ${n}s, qemu pids $Q1 $Q2"
touch /tmp/l2a/bump-tsc /tmp/l2b/bump-tsc
tracevisor record -o /out/both --guest vsock:3,pid:$Q1,name:a --guest vsock:4,pid:$Q2,name:b \
	--clock x86-tsc --sync-interval 0.25 --duration 10 >/out/both.log 2>&1
echo $? >/out/both.status
tracevisor record -o /out/dies --guest vsock:3,pid:$Q1,name:a --guest vsock:4,pid:$Q2,name:b \
	--clock x86-tsc --sync-interval 0.25 --duration 20 >/out/dies.log 2>&1 &
R=$!	# --duration counts from the start, the wait for the guests included
n=0
while [ ! -e /out/dies/guest-b/header_page ] && [ $n -lt 60 ]; do sleep 1; n=$((n + 1)); done
sleep 3
kill -9 $Q2 && echo "killed L2 b (qemu $Q2) $((n + 3)) s into the recording"
wait $R
echo $? >/out/dies.status
touch /tmp/l2a/done
lab-guest --wait $Q1
echo $? >/out/l2a.status
lab-guest --wait $Q2 2>/dev/null
cp /tmp/l2a/agent.log /out/agent-a.log; cp /tmp/l2b/agent.log /out/agent-b.log
exit 0'
run_lab kvm "$L1_SCRIPT" guest-multi LAB_TIMEOUT=900
expect_rc 0 "L1 script"
read -r Q1 Q2 <"$OUT/qemu.pids" || fail "no qemu pids written"
cat "$OUT/both.log" "$OUT/dies.log" >&2
[ "$(cat "$OUT/both.status")" = 0 ] || fail "two-guest record exited $(cat "$OUT/both.status")"
[ "$(cat "$OUT/dies.status")" = 3 ] || fail "record exited $(cat "$OUT/dies.status") when guest b died, want 3 (a guest incomplete)"
[ "$(cat "$OUT/l2a.status")" = 0 ] || fail "L2 a exited $(cat "$OUT/l2a.status")"

# GUEST QEMU-PID SESSION STATUS MIN-EVENTS MIN-PINGS MIN-HCALLS: figures in FIG
check_guest() {
	FIG=$(python3 "$REPO/tests/e2e/guest_check.py" "$TV" "$3" "$1" --status "$4" \
		--hostname "l2-$1" --qemu-pid "$2" --min-guest-events "$5" --min-pings "$6" \
		--min-hcalls "$7" --min-vcpu-exits 100) || fail "guest $1 in $3: $FIG"
	echo "ok: guest $1 in ${3##*/}: $FIG" >&2
}

# key of sync/transforms of SESSION for guest G
tkey() { sed -n "s/^guest-$2\\.$3=//p" "$1/sync/transforms"; }

# The synced guest G of SESSION (recorded with --clock x86-tsc): exact, by
# the TSC relation made of its own VM's kvm_write_tsc_offset (the L2
# workload writes its TSC every few seconds: a new offset each time),
# no probe pair inverted, and its events inside its own VM's vCPU
# guest-mode intervals.  Offsets or kvm_entry/kvm_exit of the other VM
# would put its events far outside (host/vcpus names swapped: 98-99%).
# Up to 0.1% may fall outside (seen: 0-2 per run, once 9 of 112819): in
# that run the events of one guest run carry guest TSCs up to ~1 ms past
# the vCPU's kvm_exit under the offset in force (the segment search picked
# the right one; L1's KVM then wrote -839, -193, +864 us while the vCPU was
# out): under nested TCG the L2 TSC as traced is not always exactly L1's
# plus the offset.  (The local clock is no line under nested TCG,
# doc/sync-probes.md: sync-kvm covers it.)
check_sync() {
	local q method checked viol vviol vchecked segs
	q=$(tkey "$1" "$2" quality) method=$(tkey "$1" "$2" method)
	checked=$(tkey "$1" "$2" pairs_checked) viol=$(tkey "$1" "$2" causality_violations)
	vviol=$(tkey "$1" "$2" vcpu_violations) vchecked=$(tkey "$1" "$2" vcpu_events_checked)
	segs=$(tkey "$1" "$2" tsc_segments)
	[ -s "$1/guest-$2/tsc" ] || fail "guest $2: no guest-$2/tsc (debugfs tsc-offset) in ${1##*/}"
	[ "$q/$method" = exact/tsc ] || fail "guest $2 in ${1##*/}: sync $q/$method, not exact/tsc: $(tkey "$1" "$2" message)"
	[ "${checked:-0}" -gt 0 ] || fail "guest $2: no probe pairs checked for causality"
	[ "$((viol - vviol))" = 0 ] || fail "guest $2: $((viol - vviol)) probe causality violations in $checked pairs"
	[ "${vchecked:-0}" -gt 1000 ] || fail "guest $2: only ${vchecked:-0} events checked against vCPU residency"
	[ "$((vviol * 1000))" -le "$vchecked" ] ||
		fail "guest $2: $vviol of $vchecked events outside its vCPUs' guest-mode intervals"
	[ "${segs:-0}" -ge 2 ] || fail "guest $2: only ${segs:-0} TSC offset segments: kvm_write_tsc_offset not followed?"
	echo "ok: guest $2 in ${1##*/}: sync exact/tsc, $segs TSC offset segments, 0/$checked probe causality violations, $vviol/$vchecked vCPU-residency outliers" >&2
}

# 1. both guests for the whole recording
S=$OUT/both
grep -q "^domains=host,guest-a,guest-b$" "$S/session.meta" ||
	fail "session.meta: $(grep '^domains=' "$S/session.meta")"
check_guest a "$Q1" "$S" complete 1000 10 5
check_guest b "$Q2" "$S" complete 1000 10 5
"$TV" stat "$S" >"$T/both.stat" || fail "stat"
for vm in "a[$Q1]" "b[$Q2]"; do
	grep -qF "$vm" "$T/both.stat" || { cat "$T/both.stat" >&2; fail "stat has no rows for VM $vm"; }
done
"$TV" sync "$S" >&2 || fail "tracevisor sync of the two-guest session"
check_sync "$S" a
check_sync "$S" b

# 2. b killed: b truncated, a and the host went on
S=$OUT/dies
grep -q "guest b: .*truncated" "$OUT/dies.log" || fail "record did not report guest b truncated"
grep -q "guest a: .*complete" "$OUT/dies.log" || fail "record did not report guest a complete"
grep -q "^status=truncated: guest channel closed" "$S/guest-b/meta" ||
	fail "guest b meta: $(grep '^status=' "$S/guest-b/meta")"
# b's probe markers may all sit in guest pages not yet sent when it dies
# (seen: 5207 events, none a marker), so none are required of b here.
check_guest b "$Q2" "$S" truncated 100 0 0
fb=$FIG
"$TV" sync "$S" >&2 || fail "tracevisor sync of the session with a dead guest"
check_sync "$S" a
# Re-read a's figures now that its events are mapped to the host clock.
check_guest a "$Q1" "$S" complete 1000 10 5
fa=$FIG
python3 - "$fa" "$fb" "$S/host/meta" <<'PY' || fail "guest a or the host stopped with guest b"
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
meta = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[3]) if "=" in l)
# x86-tsc sessions are reported in host TSC cycles
per_s = int(meta["tsc_khz"]) * 1e3 if meta.get("clock") == "x86-tsc" else 1e9
b_end = b["last_vcpu_exit_ts"]          # host clock: b's qemu killed
for what in ("last_vcpu_exit_ts", "last_guest_ts"):
    gap = (a[what] - b_end) / per_s
    print("a's %s: %.1f s after b's last vCPU exit" % (what, gap), file=sys.stderr)
    assert gap > 3, what
PY
"$TV" stat "$S" >"$T/dies.stat" || fail "stat failed on the session with a dead guest"
echo "PASS: two nested KVM guests recorded at once, each stream its own, both synced; one killed, the other and the host went on" >&2
