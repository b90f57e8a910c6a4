#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1 script is single-quoted on purpose
# Kernel dynamic probes on a real SVM KVM host (the lab's nested L1, whose
# 6.1 kernel has kprobe_events): while the test VMM makes K CPUID exits
# (twice: --repeat 2),
#  - kprobe and kretprobe (with $retval) on kvm_emulate_cpuid fire 2K times
#    each, recorded as probes:NAME;
#  - --time-function kvm_emulate_cpuid: stat's func:kvm_emulate_cpuid row
#    counts 2K calls, timed, in the test VMM's process and vCPU;
#  - -e kvm:kvm_exit -f 'exit_reason == 0x72' (SVM CPUID) filters that event
#    only: stat's exits are the 2K cpuid ones, kvm_entry unfiltered;
#  - a run killed with SIGKILL leaves its kprobe; the next run removes it;
#    no probe is left after any run.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
N=300 M=200 K=100

run_lab kvm '
PATH=/opt/tracevisor:$PATH
VMM="/opt/tracevisor/tests/tv-testvmm --outs '$N' --ins '$M' --cpuids '$K' --repeat 2"
left() { grep -c "tvprobe_\|tvfunc_" /sys/kernel/tracing/dynamic_events; }
tracevisor record -q -o /out/kp -e "kprobe:cpuid_in=kvm_emulate_cpuid" \
	-e "kretprobe:cpuid_out=kvm_emulate_cpuid \$retval" -- $VMM || exit 21
left > /out/left-kp
tracevisor report /out/kp > /out/kp.txt || exit 22
tracevisor record -q -o /out/tf --time-function kvm_emulate_cpuid -e kvm:kvm_exit -e kvm:kvm_entry -- $VMM || exit 23
left > /out/left-tf
tracevisor stat --json /out/tf > /out/tf.json || exit 24
tracevisor record -q -o /out/flt -e kvm:kvm_exit -f "exit_reason == 0x72" -e kvm:kvm_entry -- $VMM || exit 25
tracevisor stat --json /out/flt > /out/flt.json || exit 26
tracevisor record -q -o /out/killed -e "kprobe:k1=kvm_emulate_cpuid" &
for i in $(seq 50); do [ "$(left)" -gt 0 ] && break; sleep 0.1; done
kill -9 $!
left > /out/left-killed
tracevisor record -q -o /out/next -e kvm:kvm_exit -- true || exit 27
left > /out/left-next
exit 0' svm
expect_rc 0 "kprobes in the nested SVM host"

for f in left-kp left-tf left-next; do
	[ "$(cat "$OUT/$f")" = 0 ] || fail "$f: probes left after the run"
done
[ "$(cat "$OUT/left-killed")" -gt 0 ] || fail "the killed run had no probe to leave (the check proves nothing)"
got=$(grep -c "probes:cpuid_in " "$OUT/kp.txt"); [ "$got" = $((2 * K)) ] || fail "kprobe: $got hits, want $((2 * K))"
got=$(grep -c "probes:cpuid_out .*arg1=0x1" "$OUT/kp.txt"); [ "$got" = $((2 * K)) ] ||
	fail "kretprobe \$retval=1: $got hits, want $((2 * K)) ($(grep -m1 cpuid_out "$OUT/kp.txt"))"
python3 - "$OUT/tf.json" "$OUT/flt.json" $((2 * K)) <<'PY' || fail "stat rows"
import json, sys
tf, flt, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
f = [r for r in tf if r["reason"] == "func:kvm_emulate_cpuid"]
assert len(f) == 1 and f[0]["count"] == want, f
assert f[0]["vm"].startswith("tv-testvmm[") and f[0]["p50_ns"] > 0, f
cpuid = [r for r in tf if r["reason"] == "cpuid"]
assert sum(r["count"] for r in cpuid) == want, cpuid
reasons = {r["reason"]: r["count"] for r in flt}
assert reasons == {"cpuid": want}, reasons
print("func:kvm_emulate_cpuid %d calls, p50 %d ns; filtered exits %s" % (f[0]["count"], f[0]["p50_ns"], reasons))
PY
echo "PASS: kprobe/kretprobe $((2 * K)) each, --time-function row, -f per event, stale kprobe removed" >&2
