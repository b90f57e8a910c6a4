#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the dom0 script is single-quoted on purpose
# tv-lab: own-machine: the only scenario with its LAB_EXTRA (the NFS kit)
# `record` onto NFS (issue #22, "any output filesystem"): in the lab's real
# Xen dom0, an NFSv4.2 export served by dom0's own kernel nfsd over
# loopback (tests/lab/nfs-kit, nfs-serve: the lab has no network) is
# mounted, and `tracevisor record --xen -e sched:sched_switch` writes a
# session onto it: Xen's windows straight from the foreign mapping (or
# through the consumer's copy where the file system refuses the mapping,
# lib/util/write_mapped.c) and dom0's kernel trace.  Checks: no write
# error, the Xen and host domains complete and read here on the host with
# their counts equal to the metas'.  (9p is checked by xen-record.sh.)
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
[ -x "$TV" ] || skip "build/tracevisor not built"
KIT=$("$TV_ROOT/tests/lab/nfs-kit") || fail "cannot build the lab's NFS kit"

run_lab xen '
TV=/opt/tracevisor/tracevisor
K='"$KIT"'
$K/nfs-serve up /mnt/nfs >/out/nfs-up.log 2>&1 || { cat /out/nfs-up.log; exit 20; }
grep " /mnt/nfs nfs4 " /proc/mounts >/out/nfs.fs
$TV record --xen -e sched:sched_switch -o /mnt/nfs/s -- sh -c "sleep 1; i=0; while [ \$i -lt 40 ]; do /bin/true; i=\$((i+1)); done; sleep 1" \
	2>/out/record.err; echo $? >/out/record.rc
tar -C /mnt/nfs -cf /out/s.tar s || echo "tar of the NFS session failed" >&2
$K/nfs-serve down /mnt/nfs
exit 0' xen-nfs LAB_TIMEOUT=600 "LAB_EXTRA=$KIT"
expect_rc 0 "dom0 script"
[ -s "$OUT/nfs.fs" ] || fail "dom0 did not mount its NFS export: $(cat "$OUT/nfs-up.log")"
cat "$OUT/record.err" >&2
[ "$(cat "$OUT/record.rc")" = 0 ] || fail "record onto NFS exited $(cat "$OUT/record.rc")"
grep -q "Cannot write" "$OUT/record.err" && fail "record onto NFS: $(grep "Cannot write" "$OUT/record.err")"
tar -C "$OUT" -xf "$OUT/s.tar" || fail "cannot unpack the NFS session"
S=$OUT/s
nx=$(sed -n "s/^events_total=//p" "$S/xen/meta")
[ "${nx:-0}" -gt 500 ] || fail "Xen onto NFS: only ${nx:-no} records"
[ "$(sed -n "s/^lost_total=//p" "$S/xen/meta")" = 0 ] || fail "Xen onto NFS lost records"
"$TV" report "$S" >"$T/r.txt" || fail "report of the NFS session failed"
rx=$(grep -c " xen:xen_" "$T/r.txt")
rh=$(grep -c " sched:sched_switch " "$T/r.txt")
[ "$rx" -gt 500 ] || fail "Xen onto NFS: the meta counts $nx records, report reads $rx"
[ "$rh" -gt 0 ] || fail "dom0's kernel trace onto NFS: no sched_switch read"
echo "onto NFS: $nx Xen records recorded, report reads $rx xen and $rh sched_switch events" >&2
echo "PASS: onto NFS, Xen and dom0 domains complete" >&2
