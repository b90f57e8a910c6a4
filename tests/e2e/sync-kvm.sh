#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Issue 5 on the lab's nested SVM KVM host: L1 records its kvm events and
# the L2 guest's kernel (tracevisor-agent in L2, message and hypercall sync
# probes) twice, with the default local clock and with --clock x86-tsc, then
# this host's tracevisor synchronises each session and checks:
# local: guest quality exact or accurate (or approximate with a bound
# under 250 us: nested TCG's hypercall round trips), 0 probe causality
# violations, few guest events outside their vCPU's runs (see below);
# x86-tsc: the exact TSC relation (method tsc, every kvm_write_tsc_offset
# followed), 0 probe causality violations, 0 guest events outside their
# vCPU's kvm_entry..kvm_exit;
# both: report merged in time order across domains, and the CTF export read
# by babeltrace2 without a word on stderr, with report's events in its order.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] ||
	skip "build/tracevisor-agent not built: the guest agent (branch guest) is needed to record L2"
command -v babeltrace2 >/dev/null || skip "needs babeltrace2 (make deps)"

L2_SCRIPT=$L2_AGENT_SCRIPT

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/s --guest vsock:3,pid:$QPID,name:l2 --sync-interval 0.25 --duration 10 >/out/record.log 2>&1
echo $? >/out/record.status
# The agent serves one session after another: the same L2, TSC clock.
touch /tmp/l2/bump-tsc
tracevisor record -o /out/s-tsc --clock x86-tsc --guest vsock:3,pid:$QPID,name:l2 --sync-interval 0.25 --duration 10 >/out/record-tsc.log 2>&1
echo $? >/out/record-tsc.status
touch /tmp/l2/done
lab-guest --wait $QPID
exit 0' sync-kvm LAB_TIMEOUT=900
expect_rc 0 "L1 script"
for r in record record-tsc; do
	[ "$(cat "$OUT/$r.status")" = 0 ] || { cat "$OUT/$r.log" >&2; fail "$r exited $(cat "$OUT/$r.status")"; }
done

# get SESSION KEY: guest-l2.KEY of SESSION's sync/transforms
get() { sed -n "s/^guest-l2\.$2=//p" "$1/sync/transforms"; }

# sync_checks SESSION: synchronise and check what holds for both clocks.
sync_checks() {
	local s=$1
	"$TV" sync "$s" >&2 || fail "tracevisor sync $s"
	q=$(get "$s" quality) bound=$(get "$s" bound_ns) viol=$(get "$s" causality_violations)
	checked=$(get "$s" pairs_checked) vviol=$(get "$s" vcpu_violations)
	vchecked=$(get "$s" vcpu_events_checked)
	[ "${bound:--1}" -ge 0 ] || fail "$s: no bound reported"
	# exact or accurate (bound <= 100 us); approximate only with a bound
	# under 250 us: the bound is set by hypercall round trips, ~93 us under
	# nested TCG, so 100 us is within the lab's noise (bounds 51-158 us
	# over this test's runs, the 158 us one with 0 of 78,672 causality
	# checks failing).  A wrong transform still fails below.
	case $q in
	exact|accurate) ;;
	approximate) [ "$bound" -le 250000 ] || fail "$s: guest quality $q, bound $bound ns over 250 us: $(get "$s" message)" ;;
	*) fail "$s: guest quality $q: $(get "$s" message)" ;;
	esac
	[ "${checked:-0}" -gt 0 ] || fail "$s: no probe pairs checked for causality"
	# Send/receive pairs (message and hypercall probes) must never invert.
	[ "$((viol - vviol))" = 0 ] || fail "$s: $((viol - vviol)) probe causality violations in $checked pairs"
	[ "${vchecked:-0}" -gt 1000 ] || fail "$s: only ${vchecked:-0} guest events checked against vCPU residency"
}

S=$OUT/s
sync_checks "$S"
# Guest events outside their vCPU's kvm_entry..kvm_exit by more than the
# bound: seen at 1e-5..2.4e-3 of the events with the local clock: L2's
# kvm-clock is not linear to L1's clock under TCG (doc/sync-probes.md,
# "Local clocks in the nested lab"); tolerate 1%, as sync-two-clocks does,
# and report the count.  A wrong transform puts far more outside.
[ "$((vviol * 100))" -le "$vchecked" ] || fail "$vviol of $vchecked guest events outside their vCPU's guest-mode intervals"
echo "ok: local clock: guest-l2 $q, bound $bound ns, 0/$checked probe causality violations, $vviol/$vchecked vCPU-residency outliers" >&2

ST=$OUT/s-tsc
# The recorder must have saved what the TSC relation is made of.
[ -s "$ST/guest-l2/tsc" ] || fail "no guest-l2/tsc (debugfs kvm/PID-*/vcpu*/tsc-offset) in the TSC session"
grep -q '^events=.*kvm:kvm_write_tsc_offset' "$ST/host/meta" || fail "kvm_write_tsc_offset not recorded on the host"
sync_checks "$ST"
[ "$q/$(get "$ST" method)" = exact/tsc ] ||
	fail "x86-tsc: guest-l2 is $q/$(get "$ST" method), not exact/tsc: $(get "$ST" message)"
# Exact: not one guest event may fall outside its vCPU's runs.
[ "$vviol" = 0 ] || fail "x86-tsc: $vviol of $vchecked guest events outside their vCPU's kvm_entry..kvm_exit"
segs=$(get "$ST" tsc_segments) hdiff=$(get "$ST" hull_tsc_diff) hbound=$(get "$ST" hull_bound)
[ "$(wc -l <"$ST/sync/guest-l2.tsc")" = "$segs" ] || fail "x86-tsc: sync/guest-l2.tsc does not hold the $segs segments"
# The L2 workload writes its TSC every few seconds (L2_AGENT_SCRIPT), so
# L1's KVM writes new offsets mid-recording: changes to follow.
[ "${segs:-0}" -ge 2 ] || fail "x86-tsc: only ${segs:-0} TSC offset segments: kvm_write_tsc_offset not followed?"
echo "ok: x86-tsc: guest-l2 tsc/exact, $segs TSC offset segments, 0/$checked probe causality violations, 0/$vchecked vCPU-residency outliers; probe hull vs TSC relation: $hdiff cycles apart, hull bound $hbound" >&2

# merged_checks SESSION NAME: report in time order, CTF export in report's order.
merged_checks() {
	local s=$1 n=$2
	"$TV" report --json "$s" >"$T/$n.json" || fail "report $s"
	python3 - "$T/$n.json" <<'PY' || fail "merged report of $s"
import json, sys
last, doms = -1, set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert e["ts"] >= last, "out of order at %d" % e["ts"]
    last = e["ts"]
    doms.add(e["domain"])
assert {"host", "guest:l2"} <= doms, doms
PY
	"$TV" export -q --format ctf -o "$T/$n.ctf" "$s" || fail "export ctf $s"
	babeltrace2 --clock-cycles "$T/$n.ctf" >"$T/$n.bt" 2>"$T/$n.bterr" || fail "babeltrace2 $s"
	[ ! -s "$T/$n.bterr" ] || { head "$T/$n.bterr" >&2; fail "babeltrace2 wrote to stderr ($s)"; }
	python3 -c 'import json,sys; [print(json.loads(l)["ts"]) for l in open(sys.argv[1])]' \
		"$T/$n.json" >"$T/$n.ts-report"
	sed -E 's/^\[0*([0-9]+)\].*/\1/' "$T/$n.bt" >"$T/$n.ts-bt"
	cmp -s "$T/$n.ts-report" "$T/$n.ts-bt" || fail "babeltrace2 count or order differs from report ($s)"
	echo "ok: $s: merged report and CTF export of $(wc -l <"$T/$n.ts-bt") events" >&2
}
merged_checks "$S" local
merged_checks "$ST" tsc
echo "PASS: nested KVM guest synced with the local clock ($(get "$S" quality), bound $(get "$S" bound_ns) ns) and exactly with the TSC" >&2
