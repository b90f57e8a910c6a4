# SPDX-License-Identifier: GPL-2.0
# Bad input to record: one clear line, non-zero exit, nothing left behind.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs

expect_error() {	# name pattern command...
	local name=$1 pattern=$2; shift 2
	local out rc pid
	"$@" 2>"$TV_TMP/err" >/dev/null & pid=$!
	wait $pid; rc=$?
	out=$(cat "$TV_TMP/err")
	[ $rc -ne 0 ] || fail "$name: exit status 0"
	echo "$out" | grep -q -- "$pattern" || fail "$name: message '$out' lacks '$pattern'"
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$name: not one line: $out"
	! instance_left $pid || fail "$name: instance left: tracevisor-$pid"
	echo "ok: $name -> $out"
}

expect_error "unknown event" 'Unknown event: "kvm:no_such_event"' \
	"$TV" record -q -o "$TV_TMP/a" -e kvm:no_such_event --duration 0.1
[ ! -e "$TV_TMP/a" ] || fail "unknown event left $TV_TMP/a"
expect_error "unknown system" 'Unknown event: "nosuchsys"' \
	"$TV" record -q -o "$TV_TMP/b" -e nosuchsys --duration 0.1
expect_error "bad filter" 'Invalid filter' \
	"$TV" record -q -o "$TV_TMP/c" -e sched:sched_switch -f 'no_such_field == 3 &&' --duration 0.1
[ ! -e "$TV_TMP/c" ] || fail "bad filter left $TV_TMP/c"
expect_error "bad clock" 'Unknown trace clock: "sundial"' \
	"$TV" record -q -o "$TV_TMP/d" -e sched:sched_switch --clock sundial --duration 0.1
mkdir "$TV_TMP/exists"; touch "$TV_TMP/exists/keep"
expect_error "existing output" 'Output exists' \
	"$TV" record -q -o "$TV_TMP/exists" -e sched:sched_switch --duration 0.1
[ -e "$TV_TMP/exists/keep" ] || fail "existing output was touched"
expect_error "missing command" 'Cannot run command: name="/no/such/cmd"' \
	"$TV" record -q -o "$TV_TMP/e" -e sched:sched_switch -- /no/such/cmd
# A command that fails on its own: its status, the session kept and readable.
"$TV" record -q -o "$TV_TMP/cmdfail" -e sched:sched_switch -- sh -c 'sleep 0.2; exit 3' 2>"$TV_TMP/err"
rc=$?
[ $rc = 3 ] || fail "failing command: record exited $rc, not the command's 3"
grep -q "command 'sh' exited with status 3; the session is kept" "$TV_TMP/err" || fail "failing command: $(cat "$TV_TMP/err")"
"$TV" report "$TV_TMP/cmdfail" >/dev/null || fail "failing command: the session is not readable"
"$TV" record -q -o "$TV_TMP/cmdkill" -e sched:sched_switch -- sh -c 'kill -9 $$' 2>/dev/null
rc=$?
[ $rc = 137 ] || fail "killed command: record exited $rc, not 128+9"
"$TV" record -q -o "$TV_TMP/cmdok" -e sched:sched_switch -- true || fail "a command that succeeds: record failed"
echo "ok: a failing command's status passed on, sessions kept"
expect_error "bad buffer size" 'invalid buffer size' "$TV" record -b 0 -o "$TV_TMP/f"
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	expect_error "not root" 'needs root' setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$TV" record -q -o "$TV_TMP/g" -e sched:sched_switch --duration 0.1
	[ ! -e "$TV_TMP/g" ] || fail "non-root left $TV_TMP/g"
fi
# A guest whose channel does not connect: said after 5 s with why, then the
# recording goes on without it (exit 3: a guest incomplete)
"$TV" record -o "$TV_TMP/noguest" -e sched:sched_switch --duration 7 \
	--guest "serial:$TV_TMP/no-such-port,name:gone" 2>"$TV_TMP/noguest.err"
rc=$?
[ $rc = 3 ] || fail "a guest that never connects: record exited $rc, not 3: $(cat "$TV_TMP/noguest.err")"
grep -q "^tracevisor record: waiting for guest gone: cannot connect to its agent yet: errno=2 (No such file or directory)" \
	"$TV_TMP/noguest.err" || fail "no early line saying why guest gone waits: $(cat "$TV_TMP/noguest.err")"
[ "$(grep -c "waiting for guest gone" "$TV_TMP/noguest.err")" = 1 ] || fail "the wait said more than once"
echo "ok: a guest that never connects: said once after 5 s, why, exit 3"
# A report of something that is not a session.
expect_error "report of a non-session" 'Not a complete tracevisor session' "$TV" report "$TV_TMP"
expect_error "stat of a missing dir" "Cannot open session directory" "$TV" stat "$TV_TMP/nope"
echo "all errors clear"
