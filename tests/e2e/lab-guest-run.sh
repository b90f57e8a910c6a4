#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# lab `guest` topology: a trivial script runs as root, its stdout comes back
# on lab's stdout, its /out files and the console log land in OUTDIR, its
# exit status is lab's, and /opt/tracevisor mirrors build/.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

run_lab guest '
echo "hello from $(id -u) on $(uname -m)"
echo payload > /out/payload.txt
mkdir -p /out/sub && echo nested > /out/sub/f
cd /opt/tracevisor && find . -type f | sort > /out/opt.list
test -e /sys/kernel/tracing/trace || exit 9
if [ -x /opt/tracevisor/tracevisor ]; then
	tracevisor --help >/dev/null 2>&1 || tracevisor help >/dev/null 2>&1 && echo "tracevisor: ok"
fi
exit 0' run
expect_rc 0 "trivial script"
grep -qx "hello from 0 on x86_64" "$STDOUT" || fail "script output not on lab's stdout"
[ "$(cat "$OUT/payload.txt")" = payload ] || fail "/out/payload.txt not in OUTDIR"
[ "$(cat "$OUT/sub/f")" = nested ] || fail "/out/sub/f not in OUTDIR"
grep -q "script end (status 0)" "$OUT/console.log" || fail "console.log not kept"
# build/ is /opt/tracevisor, with the libraries its binaries need
if [ -x "$REPO/build/tracevisor" ]; then
	grep -qx ./tracevisor "$OUT/opt.list" || fail "/opt/tracevisor has no tracevisor"
	grep -qx "tracevisor: ok" "$STDOUT" || fail "build/tracevisor does not run in the guest"
fi

# An initramfs that comes without some of /opt's archive (seen on Xen dom0s
# in CI) is named on the console and restored from the host's run
# directory before the script runs (tests/lab/init, check_initramfs).
if [ -x "$REPO/build/tracevisor" ]; then
	lib=$(ldd "$REPO/build/tracevisor" | awk '/libtraceevent/ { print $3 }')
	lib=usr${lib#/usr}
	run_lab guest '
[ -s /'"$lib"' ] || exit 8
tracevisor --help >/dev/null 2>&1 || exit 9
exit 0' dropped LAB_SHARED= "LAB_TEST_INITRAMFS_DROP=$lib"
	expect_rc 0 "the script after a restored initramfs"
	grep -q "the initramfs came incomplete (first missing or short: /$lib); restoring" "$OUT/console.log" ||
		fail "the dropped /$lib is not named on the console"
	! grep -q "still missing" "$OUT/console.log" || fail "the restore left files missing"
fi
echo "PASS: lab guest runs a script, returns output, files and status" >&2
