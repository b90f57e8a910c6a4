#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # guest scripts are single-quoted on purpose
# lab `xen` topology: dom0 runs under Xen 4.17 with xenfs, privcmd and
# evtchn; `xl info` (xenstored runs in dom0) and xlinfo (libxenctrl's
# xc_physinfo, no xenstore) answer; xentrace records hypervisor events.
# shellcheck source-path=SCRIPTDIR source=../lab/e2e-lib.sh
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight

run_lab xen '
test -e /proc/xen/capabilities || exit 11
grep -q control_d /proc/xen/capabilities || exit 12
xlinfo > /out/xlinfo.txt || exit 13
xl info > /out/xl-info.txt 2>/out/xl-info.err || exit 14
# xentrace cannot write its mapped buffers to 9p directly (EFAULT): use /tmp
xentrace -D -e all -T 2 /tmp/trace.bin > /out/xentrace.log 2>&1
cp /tmp/trace.bin /out/trace.bin
exit 0' xen
expect_rc 0 "xen dom0 script"
grep -q "^xen_major *: 4" "$OUT/xlinfo.txt" || fail "xlinfo: no xen_major"
grep -q "^nr_cpus *: 2" "$OUT/xlinfo.txt" || fail "xlinfo: nr_cpus is not 2"
grep -q "^xen_version *: 4.17" "$OUT/xl-info.txt" || fail "xl info: no xen_version 4.17"
sz=$(stat -c %s "$OUT/trace.bin")
[ "$sz" -gt 10000 ] || fail "xentrace wrote only $sz bytes"
echo "PASS: xl info and xlinfo answer in dom0; xentrace wrote $sz bytes" >&2
