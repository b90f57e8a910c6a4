#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# libtracevisor-ust on a real guest kernel (the lab's `guest` machine: the
# Debian 6.1 kernel under QEMU, glibc registering rseq): the tracer's unit
# programs run there as they run on the host — rseq per-CPU buffers and
# per-thread slots with signal handlers (blocking, exact per thread),
# discard counted exactly, overwrite, variable sizes, no-rseq fallback,
# dlopen/dlclose and globs at run time, SIGKILL recovery and tracing from
# before main() through the registration socket — and ust-demo traced by
# TRACEVISOR_UST.
#
# test_ust_registry checks that a patched call site takes effect by the time
# tv_ust_enable()/tv_ust_disable() return, here on 2 vCPUs: under QEMU's
# multi-threaded TCG the other vCPU could go on with a stale translation of
# the old code for good (5 of 30 runs) until every patch was stored a second
# time after the membarrier (ust_registry.c, ust_repatch_all: 0 of 30).
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
for f in tests/test_ust_buffers tests/test_ust_registry tests/test_ust_branch tests/test_ust_crash \
	tests/test_ust_format tests/libust_plugin.so examples/ust-demo libtracevisor-ust.so.0; do
	[ -e "$REPO/build/$f" ] || fail "no $REPO/build/$f: run make first"
done

run_guest() {	# NAME PROGRAMS...
	local name=$1
	shift
	run_lab guest '
cd /opt/tracevisor || exit 9
uname -r
echo "cpus $(nproc)"
st=0
for t in '"$*"'; do
	if tests/$t >/out/$t.log 2>&1; then echo "ok $t"; else echo "FAILED $t"; st=1; fi
done
if [ "$(nproc)" -gt 1 ]; then
	TRACEVISOR_UST_SOCK= TRACEVISOR_UST="demo:*" examples/ust-demo 100000 2 || st=1
fi
exit $st' "$name" LAB_TIMEOUT="${LAB_TIMEOUT:-900}" ${SMP:+LAB_QEMU_ARGS="-smp $SMP"}
	for t in "$@"; do
		grep -qx "ok $t" "$STDOUT" || { cat "$OUT/$t.log" >&2; fail "$t failed in the guest ($name)"; }
		tail -n 1 "$OUT/$t.log" >&2
	done
	expect_rc 0 "the tracer's programs in the guest ($name)"
	grep -h "^blocking\|^discard:\|^variable\|^SIGKILL\|^TRACEVISOR_UST\|^g:a\|^plug" "$OUT"/test_ust_*.log >&2
	sed "s/^/guest ($name): /" "$STDOUT" >&2
}

SMP='' run_guest smp2 test_ust_buffers test_ust_crash test_ust_format test_ust_branch test_ust_registry
grep -qx "cpus 2" "$STDOUT" || fail "the first guest did not have 2 CPUs"
grep -q "rseq per-CPU" "$OUT/test_ust_buffers.log" || fail "rseq per-CPU buffers not exercised in the guest"
grep -q "^ust-demo: 200000 events in 2 threads" "$STDOUT" || fail "ust-demo did not run in the guest"
echo "PASS: libtracevisor-ust's programs pass on the guest kernel ($(head -1 "$STDOUT"))" >&2
