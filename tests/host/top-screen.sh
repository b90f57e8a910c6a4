#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tracevisor top on this host, any kernel (KVM or not: the live mechanics
# need none; tests/e2e/kvm-svm-top.sh checks the numbers on a real SVM KVM):
#  - the full-screen view in tmux: keys s (sort), c (vCPU drill-down),
#    v (VM), g (guest view: without --guest it says so), r (reset), h (help),
#    q (quit), read back from the screen, on a replay of tests/samples/svm-exits
#    (tests/e2e/kvm-svm-top-guest.sh shows the guest view's rows in the lab);
#  - live, full screen, ended by Ctrl-C: exit 0, the kept session complete
#    (stat reads it), its tracefs instance gone (top's own, by its pid:
#    other people's recorders may run on this host);
#  - live --json --count 2: two intervals of ~0.2 s, 0 lost; the temporary
#    session removed;
#  - a live interval under 10 ms, or an unknown TERM: a one-line error,
#    exit 1, no instance of that top left in tracefs.
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
command -v tmux >/dev/null || fail "tmux not installed (make deps installs it)"
T=$TV_TMP
S=tv-top-$$
trap 'tmux kill-session -t $S 2>/dev/null' EXIT
screen() { tmux capture-pane -p -t $S; }
# pid_first FILE: the tmux command that follows runs with its pid in FILE
pid_first() { echo "sh -c 'echo \$\$ >\"\$0\"; exec \"\$@\"' $1"; }
wait_screen() {	# PATTERN: until the screen shows it (5 s)
	for _ in $(seq 50); do screen | grep -q -- "$1" && return 0; sleep 0.1; done
	screen >&2
	fail "the screen never showed \"$1\""
}

tmux new-session -d -s $S -x 140 -y 30 \
	"$TV top --replay $TV_ROOT/tests/samples/svm-exits; echo TOP-EXIT=\$? > $T/rc1; sleep 60"
wait_screen "sort: total   vm: all   vcpu: all"
wait_screen "vm1\[1000\] *1 *hlt *1 *1.0 *420.0us"
tmux send-keys -t $S s && wait_screen "sort: count"
[ "$(screen | sed -n 4p | awk '{print $3}')" = io ] || fail "sorted by count, io (2 exits) is not first: $(screen | sed -n 4p)"
tmux send-keys -t $S c && wait_screen "vcpu: 0 "
tmux send-keys -t $S c && wait_screen "vcpu: 1 "
! screen | grep -qE "^vm1\[1000\] +0 " || fail "vCPU 1 drill-down still shows vCPU 0 rows"
tmux send-keys -t $S v && wait_screen "vm: vm1\[1000\]"
tmux send-keys -t $S r && wait_screen "sort: total   vm: all   vcpu: all"
tmux send-keys -t $S g && wait_screen "view: guest tasks"
wait_screen "GUEST TASK .*MOST TIME IN"
wait_screen "(no exit joined with a guest task: start top with --guest SPEC)"
tmux send-keys -t $S g && wait_screen "REASON"
screen | grep -q "view: guest tasks" && fail "g again did not go back to the exit rows"
tmux send-keys -t $S h && wait_screen "drill down: one vCPU"
wait_screen "g   guest view (top --guest)"
tmux send-keys -t $S x && wait_screen "REASON"
tmux send-keys -t $S q
for _ in $(seq 50); do [ -s "$T/rc1" ] && break; sleep 0.1; done
[ "$(cat "$T/rc1" 2>/dev/null)" = TOP-EXIT=0 ] || fail "q: top did not exit 0: $(cat "$T/rc1" 2>/dev/null)"
tmux kill-session -t $S

tmux new-session -d -s $S -x 140 -y 30 \
	"$(pid_first "$T/top2.pid") $TV top --interval 0.2 -o $T/live; echo TOP-EXIT=\$? > $T/rc2; sleep 60"
wait_screen "0.20s interval"
tmux send-keys -t $S C-c
for _ in $(seq 100); do [ -s "$T/rc2" ] && break; sleep 0.1; done
[ "$(cat "$T/rc2" 2>/dev/null)" = TOP-EXIT=0 ] || fail "Ctrl-C: top did not exit 0: $(cat "$T/rc2" 2>/dev/null)"
[ -f "$T/live/session.meta" ] || fail "Ctrl-C: the kept session has no session.meta"
"$TV" stat "$T/live" >/dev/null || fail "stat cannot read the session top kept"
top2=$(cat "$T/top2.pid") && [ -n "$top2" ] || fail "no pid of the live top"
! instance_left "$top2" || fail "the tracefs instance of top (tracevisor-$top2) was left"
tmux kill-session -t $S

# An unknown terminal: one line, exit 1, nothing left in tracefs.
tmux new-session -d -s $S -x 140 -y 30 \
	"TERM=nosuchterm $(pid_first "$T/top3.pid") $TV top --interval 0.2 2>$T/term.err; echo TOP-EXIT=\$? > $T/rc3; sleep 60"
for _ in $(seq 100); do [ -s "$T/rc3" ] && break; sleep 0.1; done
[ "$(cat "$T/rc3" 2>/dev/null)" = TOP-EXIT=1 ] || fail "unknown TERM: top did not exit 1: $(cat "$T/rc3" 2>/dev/null)"
[ "$(wc -l <"$T/term.err")" = 1 ] && grep -q 'TERM="nosuchterm" is unknown' "$T/term.err" ||
	fail "unknown TERM: $(cat "$T/term.err")"
top3=$(cat "$T/top3.pid") && [ -n "$top3" ] || fail "no pid of the top with an unknown TERM"
! instance_left "$top3" || fail "unknown TERM: the tracefs instance tracevisor-$top3 was left"
tmux kill-session -t $S

TMPDIR=$T "$TV" top --json --count 2 --interval 0.2 >"$T/live.jsonl" &
top4=$!
wait $top4 || fail "top --json --count 2 failed"
! instance_left $top4 || fail "top --json --count 2 left its instance tracevisor-$top4"
python3 - "$T/live.jsonl" <<'PY' || fail "top --json intervals"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1])]
assert len(ivs) == 2, "%d intervals, want 2" % len(ivs)
for iv in ivs:
    assert set(iv) >= {"t_ns", "interval_ns", "lost", "rows"}, iv.keys()
    assert 0.15e9 < iv["interval_ns"] < 1.5e9, iv["interval_ns"]
    assert iv["lost"] == 0, iv
assert ivs[1]["t_ns"] > ivs[0]["t_ns"]
PY
! ls "$T" | grep -q "^tracevisor-top\." || fail "the temporary session was not removed: $(ls "$T")"

"$TV" top --interval 0.001 --count 1 >/dev/null 2>"$T/err" && fail "a 1 ms live interval was accepted"
[ "$(wc -l <"$T/err")" = 1 ] || fail "1 ms interval: not one line: $(cat "$T/err")"
grep -q "Interval too short" "$T/err" || fail "1 ms interval: $(cat "$T/err")"
echo "PASS: screen keys, Ctrl-C with a complete session and no instance, --json intervals" >&2
