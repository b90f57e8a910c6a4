# SPDX-License-Identifier: GPL-2.0
# A flight recorder whose disk fills: the snapshot that does not fit is
# said in one line (snapshot exits 1) and removed whole (no snapshot-2
# without its session.meta), the earlier snapshot stays intact, the
# recorder stays armed: once there is room again the next snapshot (the
# same number) is written and reads.  The session is on a small tmpfs of
# this test's own.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
M=$TV_TMP/m
mkdir "$M"
mount -t tmpfs -o size=4m tvflight "$M" || skip "cannot mount a tmpfs"
trap 'umount "$M" 2>/dev/null' EXIT
S=$M/s
bulk() { python3 -c 'import os
for _ in range(100000): os.getppid()'; }
"$TV" record -o "$S" -e syscalls:sys_enter_getppid --flight-recorder 512K 2> "$TV_TMP/rec.err" &
rec=$!
wait_tracing "$rec"
bulk
snap=$("$TV" snapshot "$S") || fail "snapshot 1: $(cat "$TV_TMP/rec.err")"
"$TV" report "$snap" > "$TV_TMP/r1" || fail "report of snapshot 1"
n1=$(grep -c sys_enter_getppid "$TV_TMP/r1")
echo "ok: snapshot 1: $n1 events, $(du -sk "$snap" | cut -f1) KB"
# leave ~150 KB: the next snapshot (~512 KB) cannot fit
free=$(df -k --output=avail "$M" | tail -1)
dd if=/dev/zero of="$M/filler" bs=1k count=$((free - 150)) status=none 2>/dev/null || true
bulk
"$TV" snapshot "$S" > "$TV_TMP/s2.out" 2> "$TV_TMP/s2.err" && fail "snapshot on a full disk: exit 0"
expect_eq "snapshot on a full disk: one line" "$(wc -l < "$TV_TMP/s2.err")" 1
grep -q "could not write the snapshot" "$TV_TMP/s2.err" || fail "snapshot on a full disk: $(cat "$TV_TMP/s2.err")"
echo "ok: snapshot on a full disk refused: $(cat "$TV_TMP/s2.err")"
grep -q "No space left on device" "$TV_TMP/rec.err" || fail "the recorder did not say why: $(cat "$TV_TMP/rec.err")"
[ -e "$S/snapshot-2" ] && fail "a half snapshot-2 left: $(ls -R "$S/snapshot-2")"
"$TV" report "$S/snapshot-1" > "$TV_TMP/r1b" || fail "snapshot 1 no longer reads"
cmp -s "$TV_TMP/r1" "$TV_TMP/r1b" || fail "snapshot 1 changed"
echo "ok: snapshot 1 intact, no half snapshot-2"
kill -0 "$rec" || fail "the recorder ended"
rm -f "$M/filler"
bulk
snap=$("$TV" snapshot "$S") || fail "snapshot once there is room again: $(tail -2 "$TV_TMP/rec.err")"
expect_eq "the next snapshot's directory" "$snap" "$(realpath "$S")/snapshot-2"
"$TV" report "$snap" > "$TV_TMP/r2" || fail "report of snapshot 2"
[ "$(grep -c sys_enter_getppid "$TV_TMP/r2")" -gt 1000 ] || fail "snapshot 2 holds $(grep -c sys_enter_getppid "$TV_TMP/r2") events"
echo "ok: still armed: snapshot 2 written once there was room"
kill -INT "$rec"
wait "$rec" || fail "record exited $?: $(tail -3 "$TV_TMP/rec.err")"
instance_left "$rec" && fail "tracefs instance tracevisor-$rec left"
echo "PASS: a full disk costs one snapshot, not the earlier ones nor the recorder"
