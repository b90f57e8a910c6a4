# SPDX-License-Identifier: GPL-2.0
# record --flight-recorder SIZE for the host kernel: the instance keeps the
# last SIZE (split over the CPUs, shown at the start) in overwrite mode and
# writes nothing until a snapshot; `tracevisor snapshot DIR|PID` freezes it
# (the snapshot buffer, or stop-read-restart with the gap in the meta) into
# DIR/snapshot-N/, a session that report, stat, sync and export read, which
# holds the newest events and not the overwritten oldest; the recording
# goes on (the next snapshot holds what came after); Ctrl-C writes the last
# buffers into the session itself.  A worker process of this test makes
# known syscalls: getppid as the bulk, getpid as markers.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
S=$TV_TMP/s
syscall_worker
count() {	# REPORT EVENT: lines of EVENT by the worker
	grep -c "syscalls:$2" "$1" || true
}
"$TV" record -o "$S" -f "common_pid==$worker" -e syscalls:sys_enter_getppid -e syscalls:sys_enter_getpid \
	--flight-recorder 256K 2> "$TV_TMP/rec.err" &
rec=$!
wait_tracing "$rec"
ncpus=$(getconf _NPROCESSORS_CONF)
grep -q "flight recorder: host kernel .* = $((256 / ncpus)) KB x $ncpus CPUs in memory, frozen by " "$TV_TMP/rec.err" ||
	fail "per-CPU size not shown: $(cat "$TV_TMP/rec.err")"
echo "ok: per-CPU size shown: $(grep 'flight recorder' "$TV_TMP/rec.err")"
# 200000 getppid records (~5 MB) through a 256 KB ring, then 7 markers
ask BULK 200000
ask MARK 7
bytes=$(cat "$S"/host/cpu*.raw 2>/dev/null | wc -c)
expect_eq "bytes on disk before a snapshot" "$bytes" 0
snap=$("$TV" snapshot "$S") || fail "snapshot by DIR failed"
expect_eq "snapshot 1's directory" "$snap" "$(realpath "$S")/snapshot-1"
grep -qx "domains=host" "$snap/session.meta" || fail "snapshot 1: domains: $(cat "$snap/session.meta")"
"$TV" report "$snap" > "$TV_TMP/r1" || fail "report of snapshot 1"
expect_eq "snapshot 1: the newest events (markers)" "$(count "$TV_TMP/r1" sys_enter_getpid)" 7
bulk=$(count "$TV_TMP/r1" sys_enter_getppid)
[ "$bulk" -gt 1000 ] && [ "$bulk" -lt 200000 ] || fail "snapshot 1: $bulk getppid records, want a tail (1000..199999)"
echo "ok: snapshot 1 holds the tail: $bulk of 200000 getppid records, the 7 markers"
size=$(cat "$snap"/host/cpu*.raw | wc -c)
sub=$(sed -n 's/^subbuf_size=//p' "$snap/host/meta")
[ "$size" -le $((256 * 1024 + ncpus * 2 * sub)) ] || fail "snapshot 1 holds $size bytes > 256 KB"
method=$(sed -n 's/^flight_freeze=//p' "$snap/host/meta")
gap=$(sed -n 's/^flight_gap_ns=//p' "$snap/host/meta")
case $method in
snapshot-buffer) expect_eq "snapshot buffer: no gap" "$gap" 0 ;;
stop-read-restart) [ "$gap" -gt 0 ] || fail "stop-read-restart without its gap: '$gap'" ;;
*) fail "flight_freeze='$method'" ;;
esac
echo "ok: snapshot 1: $size bytes, frozen by $method, gap $gap ns"
"$TV" stat --json "$snap" > "$TV_TMP/s1" || fail "stat of snapshot 1"
"$TV" sync "$snap" > "$TV_TMP/y1" 2>&1 || fail "sync of snapshot 1: $(cat "$TV_TMP/y1")"
"$TV" export --format perfetto -q -o "$TV_TMP/p1" "$snap" || fail "export of snapshot 1"
echo "ok: snapshot 1 read by report, stat, sync, export"
# the recording goes on: a second snapshot (by PID) holds what came after only
ask MARK 5
snap=$("$TV" snapshot "$rec") || fail "snapshot by PID failed"
expect_eq "snapshot 2's directory" "$snap" "$(realpath "$S")/snapshot-2"
"$TV" report "$snap" > "$TV_TMP/r2" || fail "report of snapshot 2"
expect_eq "snapshot 2: only the markers after snapshot 1" "$(count "$TV_TMP/r2" sys_enter_getpid)" 5
expect_eq "snapshot 2: no bulk (before snapshot 1)" "$(count "$TV_TMP/r2" sys_enter_getppid)" 0
grep -q "^trigger" "$snap/session.meta" && fail "a snapshot on request has trigger keys"
# Ctrl-C: the last buffers into the session itself
ask MARK 3
kill -INT "$rec"
wait "$rec" || fail "record exited $?: $(cat "$TV_TMP/rec.err")"
"$TV" report "$S" > "$TV_TMP/r3" || fail "report of the session"
expect_eq "the session at Ctrl-C: the markers after snapshot 2" "$(count "$TV_TMP/r3" sys_enter_getpid)" 3
grep -qx "status=complete" "$S/host/meta" || fail "session host/meta not complete"
expect_eq "flight-recorder state file removed at the end" "$(ls "$S"/flight-recorder 2>/dev/null)" ""
instance_left "$rec" && fail "tracefs instance tracevisor-$rec left"
ask QUIT 0
echo "PASS: host kernel flight recorder ($method)"
