#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A real recording killed with SIGKILL (system-call events: no /dev/kvm
# needed; tests/unit/session-untrusted.sh has the sessions built by hand):
# report and stat read what it wrote, each with one warning line saying the
# session is incomplete.  The killed recorder's own tracefs instance is
# removed here (what the next record would do).
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
[ -d /sys/kernel/tracing/events/syscalls/sys_enter_getppid ] || skip "no syscalls:sys_enter_getppid event"
K=$TV_TMP/killed
"$TV" record -q -o "$K" -e syscalls:sys_enter_getppid -- sleep 60 &
pid=$!
for _ in $(seq 100); do [ -d "$K/host/events" ] && break; sleep 0.1; done
sleep 0.5
python3 -c 'import os
for _ in range(200000): os.getppid()'
sleep 1.5	# the capture threads splice what the buffers hold
child=$(pgrep -P $pid)
kill -KILL $pid; wait $pid 2>/dev/null
[ -n "$child" ] && kill $child 2>/dev/null
# the killed run's tracefs instance: what the next record would clean up
for i in $TRACEFS/instances/tracevisor-$pid*; do [ -d "$i" ] && rmdir "$i"; done
[ -d "$K/host" ] || fail "the killed recording left no host/ directory"
[ ! -e "$K/session.meta" ] || fail "session.meta written by a killed recorder?"
out=$("$TV" report "$K" 2>"$TV_TMP/err"); rc=$?
[ $rc = 0 ] || fail "report of the killed recording: exit $rc: $(cat "$TV_TMP/err")"
grep -q "warning: Incomplete session: path=\"$K\"" "$TV_TMP/err" || fail "report did not say incomplete: $(cat "$TV_TMP/err")"
[ "$(wc -l <"$TV_TMP/err")" = 1 ] || fail "report: more than one line on stderr: $(cat "$TV_TMP/err")"
n=$(echo "$out" | grep -c sys_enter_getppid)
[ "$n" -gt 0 ] || fail "report of the killed recording: no events ($(ls -l "$K/host"))"
"$TV" stat "$K" >/dev/null 2>"$TV_TMP/err"; rc=$?
[ $rc = 0 ] || fail "stat of the killed recording: exit $rc: $(cat "$TV_TMP/err")"
grep -q "warning: Incomplete session" "$TV_TMP/err" || fail "stat did not say incomplete"
[ "$(wc -l <"$TV_TMP/err")" = 1 ] || fail "stat: more than one line on stderr: $(cat "$TV_TMP/err")"
echo "killed recording: $n events read, incomplete said" >&2
