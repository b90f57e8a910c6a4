#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 22, points 4 and 6: a guest cannot keep the recorder running, and
# record's exit status says what was recorded.  Fake agents
# (tests/helpers/tv_fake_agent.py) on UNIX sockets, `record --guest
# serial:SOCK`; each stop is timed from the signal (or the end of
# --duration) to record's exit with date +%s%N and must take 10 s at most:
#  a. a guest that never sends END after STOP but trickles DATA (a frame
#     every 5 s: each read used to restart the END wait, 60 s at most):
#     SIGINT, and --duration 3;
#  b. a guest that never answers START, and one whose socket does not exist
#     yet (the 30 s connect wait): SIGINT during the wait for guests (COMMAND
#     not run), and --duration 2 (the wait is part of the duration);
#  c. a second SIGINT during the stop (or a first one in the stop that
#     --duration began): record ends at once (exit 130), the session valid
#     (report reads the host), no tracefs instance left;
#  d. META ncpus=1024 under `ulimit -n 1024`: ends in time, or fails with
#     one line; no hang;
#  e. exit statuses: an incomplete guest -> 3 (named in one line), an honest
#     one -> 0, `-- false` -> 1, `-- sh -c 'kill -TERM $$'` -> 143.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
PIDS=""
trap 'kill $PIDS 2>/dev/null; wait 2>/dev/null' EXIT

cat >"$TV_TMP/agent.py" <<'PY'
import os, socket, sys, time
sys.path.insert(0, os.environ["TV_ROOT"] + "/tests/helpers")
from tv_fake_agent import Agent

mode, path, flag = sys.argv[1], sys.argv[2], sys.argv[3]
a = Agent(path)
try:
    if mode == "silent":                    # connected, never a HELLO
        a.accept(timeout=60, hello=False)
        open(flag, "w").close()
        while a.recv(timeout=60) is not None:
            pass
        sys.exit(0)
    a.accept(timeout=60)
    a.describe(ncpus=1024 if mode == "wide" else 1)
    a.ready()
    page = lambda: a.page(a.now_ns(), [(0, a.sched_switch())])
    a.data(0, [page()])
    open(flag, "w").close()
    stopped = a.serve_until_stop(timeout=60, end=(mode in ("honest", "wide")))
    if mode == "trickle":                   # no END, one DATA frame every 5 s
        while True:
            time.sleep(5)
            a.data(0, [page()])
    elif mode == "noend":                   # no END, nothing more
        while a.recv(timeout=60) is not None:
            pass
except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
    pass
PY

# agent MODE NAME: a fake agent on $TV_TMP/NAME.sock; $TV_TMP/NAME.up once it served START
agent() {
	rm -f "$TV_TMP/$2.up"
	TV_ROOT=$TV_ROOT python3 "$TV_TMP/agent.py" "$1" "$TV_TMP/$2.sock" "$TV_TMP/$2.up" 2>"$TV_TMP/$2.agent.err" &
	PIDS="$PIDS $!"
	for _ in $(seq 50); do [ -S "$TV_TMP/$2.sock" ] && return; sleep 0.1; done
	fail "fake agent $1 did not listen"
}
wait_file() {	# FILE: up to 20 s
	for _ in $(seq 200); do [ -e "$1" ] && return; sleep 0.1; done
	fail "$1 never came"
}
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# stop_within WHAT T0 MAX_MS: the stop (from T0) took MAX_MS at most
stop_within() {
	local ms
	ms=$(ms_since "$2")
	[ "$ms" -le "$3" ] || fail "$1: record ended $ms ms after the stop began (at most $3)"
	echo "ok: $1: ended $ms ms after the stop began" >&2
}
# host_reads DIR: report exits 0 and shows host events
host_reads() {
	local n
	"$TV" report "$1" >"$TV_TMP/report.out" 2>"$TV_TMP/report.err" ||
		fail "report of $1 exited $?: $(head -n 3 "$TV_TMP/report.err")"
	n=$(grep -c "sched:sched_switch" "$TV_TMP/report.out")
	[ "$n" -gt 0 ] || fail "report of $1: no host events"
}
gstatus() { sed -n 's/^status=//p' "$1/guest-$2/meta"; }
REC=(-e sched:sched_switch --sync-interval 0.5)

# -- a. the trickle: SIGINT during the recording, then --duration 3
agent trickle t1
S=$TV_TMP/a1
"$TV" record -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/t1.sock,name:evil" 2>"$TV_TMP/a1.err" & R=$!
PIDS="$PIDS $R"
wait_file "$TV_TMP/t1.up"; sleep 1
t0=$(date +%s%N); kill -INT $R; wait $R; rc=$?
stop_within "trickle, SIGINT" "$t0" 10000
expect_eq "trickle, SIGINT: exit status" "$rc" 3
case $(gstatus "$S" evil) in "truncated: no END from the agent within 7 s of the stop"*) ;;
	*) fail "trickle: status $(gstatus "$S" evil)" ;; esac
grep -q "^tracevisor record: 1 of 1 guests incomplete: evil (truncated); exit status 3$" "$TV_TMP/a1.err" ||
	fail "trickle: no line naming the guest: $(cat "$TV_TMP/a1.err")"
[ -s "$S/guest-evil/cpu0.raw" ] || fail "trickle: what the guest sent was not kept"
host_reads "$S"
! instance_left $R || fail "trickle: instance tracevisor-$R left"

agent trickle t2
S=$TV_TMP/a2
t0=$(date +%s%N)
"$TV" record -q -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/t2.sock,name:evil" --duration 3 2>"$TV_TMP/a2.err"
rc=$?
stop_within "trickle, --duration 3" "$t0" 13000
expect_eq "trickle, --duration 3: exit status" "$rc" 3
host_reads "$S"

# -- b. no answer to START / nobody listening: SIGINT during the wait for guests
agent silent sil
S=$TV_TMP/b1
"$TV" record -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/sil.sock,name:mute" \
	-- touch "$TV_TMP/b1.ran" 2>"$TV_TMP/b1.err" & R=$!
PIDS="$PIDS $R"
wait_file "$TV_TMP/sil.up"; sleep 1
t0=$(date +%s%N); kill -INT $R; wait $R; rc=$?
stop_within "silent guest, SIGINT during the wait for guests" "$t0" 10000
expect_eq "silent guest: exit status" "$rc" 3
[ -e "$TV_TMP/b1.ran" ] && fail "silent guest: COMMAND ran after SIGINT"
case $(gstatus "$S" mute) in "failed: no reply to START"*) ;; *) fail "silent: status $(gstatus "$S" mute)" ;; esac
host_reads "$S"

S=$TV_TMP/b2
"$TV" record -q -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/nobody.sock,name:absent" 2>"$TV_TMP/b2.err" & R=$!
PIDS="$PIDS $R"
wait_tracing $R; sleep 1
t0=$(date +%s%N); kill -INT $R; wait $R; rc=$?
stop_within "no agent listening, SIGINT during the connect wait" "$t0" 10000
expect_eq "no agent listening: exit status" "$rc" 3
case $(gstatus "$S" absent) in "failed: cannot connect to the agent"*) ;; *) fail "absent: status $(gstatus "$S" absent)" ;; esac
host_reads "$S"

agent silent sil2
S=$TV_TMP/b3
t0=$(date +%s%N)
"$TV" record -q -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/sil2.sock,name:mute" --duration 2 2>"$TV_TMP/b3.err"
rc=$?
stop_within "silent guest, --duration 2 (was 30 s of connect wait first)" "$t0" 12000
expect_eq "silent guest, --duration 2: exit status" "$rc" 3
host_reads "$S"

# -- c. a second SIGINT during the stop: at once, valid session, no instance
agent noend ne
S=$TV_TMP/c1
"$TV" record -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/ne.sock,name:evil" 2>"$TV_TMP/c1.err" & R=$!
PIDS="$PIDS $R"
wait_file "$TV_TMP/ne.up"; sleep 1
t0=$(date +%s%N); kill -INT $R; sleep 1
t1=$(date +%s%N); kill -INT $R; wait $R; rc=$?
stop_within "no END, second SIGINT" "$t1" 2000
stop_within "no END, both SIGINTs" "$t0" 10000
expect_eq "second SIGINT: exit status" "$rc" 130
case $(gstatus "$S" evil) in "truncated: the stop was cut short"*) ;; *) fail "noend: status $(gstatus "$S" evil)" ;; esac
[ -e "$S/session.meta" ] || fail "second SIGINT: no session.meta"
host_reads "$S"
! instance_left $R || fail "second SIGINT: instance tracevisor-$R left"

# a first SIGINT during a stop that --duration began: at once too
agent noend ne2
S=$TV_TMP/c2
"$TV" record -q -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/ne2.sock,name:evil" --duration 1 2>"$TV_TMP/c2.err" & R=$!
PIDS="$PIDS $R"
wait_file "$TV_TMP/ne2.up"; sleep 2
t0=$(date +%s%N); kill -INT $R; wait $R; rc=$?
stop_within "no END, SIGINT during the stop of --duration 1" "$t0" 2000
expect_eq "SIGINT during the stop of --duration: exit status" "$rc" 130
host_reads "$S"
! instance_left $R || fail "SIGINT during the stop: instance tracevisor-$R left"

# -- d. META ncpus=1024 with 1024 open files at most: no hang
agent wide w
S=$TV_TMP/d1
t0=$(date +%s%N)
(ulimit -n 1024; exec "$TV" record -q -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/w.sock,name:wide" --duration 3) \
	2>"$TV_TMP/d1.err" & R=$!
PIDS="$PIDS $R"
for _ in $(seq 150); do kill -0 $R 2>/dev/null || break; sleep 0.1; done
kill -0 $R 2>/dev/null && { kill -KILL $R; fail "ncpus=1024 under ulimit -n 1024: record still running 15 s in: $(cat "$TV_TMP/d1.err")"; }
wait $R; rc=$?
stop_within "ncpus=1024, ulimit -n 1024, --duration 3" "$t0" 13000
case $rc in
0 | 3) host_reads "$S" ;;
1) [ "$(grep -c . "$TV_TMP/d1.err")" = 1 ] || fail "ncpus=1024: exit 1 without one line: $(cat "$TV_TMP/d1.err")" ;;
*) fail "ncpus=1024: exit status $rc: $(cat "$TV_TMP/d1.err")" ;;
esac
echo "ok: ncpus=1024 under ulimit -n 1024: exit $rc$( [ "$rc" != 0 ] && echo ": $(tail -n 1 "$TV_TMP/d1.err")")" >&2

# -- e. exit statuses
agent honest h
S=$TV_TMP/e1
"$TV" record -q -o "$S" "${REC[@]}" --guest "serial:$TV_TMP/h.sock,name:fine" --duration 2 2>"$TV_TMP/e1.err"
expect_eq "honest guest: exit status" "$?" 0
expect_eq "honest guest: status" "$(gstatus "$S" fine)" complete
host_reads "$S"
"$TV" record -q -o "$TV_TMP/e2" "${REC[@]}" -- false 2>/dev/null
expect_eq "record -- false" "$?" 1
# shellcheck disable=SC2016 # the sh -c script's own $$
"$TV" record -q -o "$TV_TMP/e3" "${REC[@]}" -- sh -c 'kill -TERM $$' 2>/dev/null
expect_eq "record -- sh -c 'kill -TERM \$\$'" "$?" 143
host_reads "$TV_TMP/e3"
echo "PASS: every stop within 10 s whatever the guest did (trickle, silent, absent, no END, ncpus=1024); second SIGINT at once (130), valid session, no instance; exit statuses 3, 0, 1, 143" >&2
