#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# tv-lab: own-machine: the only scenario with its LAB_EXTRA (tmux): a shared machine would only idle after it
# top --guest on a real SVM KVM host (the lab's nested L1) with a Linux L2
# whose tracevisor-agent streams its scheduler, IRQ and syscall events:
# while top --guest --json runs (x86-tsc, exits joined live with what L2
# ran on that vCPU), L2 runs tv-cpuid N (N cpuid instructions from user
# space).  Then:
#  - tv-cpuid comes first: in the interval with the most of its exits, the
#    first row (--sort count) is tv-cpuid's cpuid row;
#  - top's counts of tv-cpuid's cpuid exits summed over the intervals equal
#    `stat --by guest-task` of the session top kept (-o), after `tracevisor
#    sync`: exactly (they all fall inside the intervals shown: top is
#    stopped 2 lags after tv-cpuid ended);
#  - every row summed: within the edges (the session goes on past the last
#    interval shown, by the lag and the stop), stated in the output;
#  - the full-screen view in tmux (brought into L1 with LAB_EXTRA), key g:
#    while a second tv-cpuid runs, the guest view's first row is
#    tv-cpuid[PID] on vCPU 0 with cpuid as the reason of most time.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || fail "build/tracevisor-agent not built (make)"
[ -x "$REPO/build/tests/tv-cpuid" ] || fail "build/tests/tv-cpuid not built (make)"
N=5000

L2_SCRIPT=$L2_AGENT_START'
l2_wait /out/go
/opt/tracevisor/tests/tv-cpuid '$N' >/out/cpuid.txt 2>&1
touch /out/cpuid.done
l2_wait /out/go2
/opt/tracevisor/tests/tv-cpuid '$N' >/out/cpuid2.txt 2>&1
touch /out/cpuid2.done
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor top --guest vsock:3,pid:$QPID,name:l2 --json --sort count --interval 1 -o /out/s \
	>/out/top.jsonl 2>/out/top.err &
TOP=$!
n=0
while [ ! -s /out/top.jsonl ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
[ -s /out/top.jsonl ] || { cat /out/top.err; exit 22; }
sleep 1
touch /tmp/l2/go
n=0
while [ ! -e /tmp/l2/cpuid.done ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done
sleep 5	# two lags: every exit of tv-cpuid is in an interval shown
kill -INT $TOP
wait $TOP || { cat /out/top.err; exit 23; }
ls /sys/kernel/tracing/instances >/out/instances
# the screen: key g while a second tv-cpuid runs
export TERM=screen LANG=C.UTF-8 LC_ALL=C.UTF-8	# tmux wants a UTF-8 locale
tmux new-session -d -s tg -x 150 -y 30 "tracevisor top --guest vsock:3,pid:$QPID,name:l2 --sort count 2>/out/screen.err; echo \$? >/out/screen.rc"
n=0
until tmux capture-pane -p -t tg | grep -q "s sort  v VM"; do
	n=$((n + 1)); [ $n -lt 300 ] || { tmux capture-pane -p -t tg; cat /out/screen.err; exit 26; }; sleep 0.1
done
tmux send-keys -t tg g
touch /tmp/l2/go2
n=0
while [ ! -e /tmp/l2/cpuid2.done ] && [ $n -lt 600 ]; do
	tmux capture-pane -p -t tg >/out/screen.$n.txt; sleep 0.2; n=$((n + 1))
done
for i in $(seq 40); do tmux capture-pane -p -t tg >/out/screen.$((n + i)).txt; sleep 0.2; done
tmux send-keys -t tg q
n=0
while [ ! -s /out/screen.rc ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/cpuid.txt /tmp/l2/cpuid2.txt /tmp/l2/agent.log /out/ 2>/dev/null
tracevisor sync /out/s >/out/sync.txt 2>&1 || exit 24
tracevisor stat --by guest-task --json /out/s >/out/gt.json || exit 25
exit 0' top-guest LAB_TIMEOUT=900 LAB_EXTRA="/usr/bin/tmux /usr/lib/terminfo /usr/lib/locale/C.utf8"
expect_rc 0 "L1 script"
cat "$OUT/top.err" "$OUT/sync.txt" >&2
pid=$(sed -n 's/^tv-cpuid: pid=\([0-9]*\) cpuids=.*/\1/p' "$OUT/cpuid.txt")
[ -n "$pid" ] || fail "tv-cpuid did not run in L2: $(cat "$OUT/cpuid.txt")"
[ -s "$OUT/instances" ] && fail "tracefs instances left in L1: $(cat "$OUT/instances")"
python3 - "$OUT/top.jsonl" "$OUT/gt.json" "$pid" $N <<'PY' || fail "top --guest against stat --by guest-task"
import json, sys
ivs = [json.loads(l) for l in open(sys.argv[1])]
stat, pid, n = json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
def mine(r):
    return r["vm"].startswith("l2[") and r.get("guest_pid") == pid and r["reason"] == "cpuid"
rows = [r for iv in ivs for r in iv["rows"]]
assert rows and all("guest_task" in r and "guest_pid" in r for r in rows), "rows without guest_task/guest_pid"
top_n = sum(r["count"] for r in rows if mine(r))
stat_n = sum(r["count"] for r in stat if mine(r))
# the N of its loop and the few of the C library's start-up
assert n <= top_n <= n + 200, "top: %d cpuid exits on tv-cpuid[%d], want %d + start-up" % (top_n, pid, n)
assert top_n == stat_n, "tv-cpuid's cpuid exits: top %d, stat --by guest-task %d" % (top_n, stat_n)
# named as stat names them: tv-cpuid, and "sh" for the few between its
# exec and the next sched_switch (the comm a switch gave that pid)
def names(rs):
    d = {}
    for r in rs:
        if mine(r):
            d[r["guest_task"]] = d.get(r["guest_task"], 0) + r["count"]
    return d
assert names(rows) == names(stat), "tv-cpuid's cpuid exits by name: top %s, stat %s" % (names(rows), names(stat))
assert max(names(rows), key=names(rows).get) == "tv-cpuid", names(rows)
best = max(ivs, key=lambda iv: sum(r["count"] for r in iv["rows"] if mine(r)))
first = best["rows"][0]
assert mine(first), "first row of the interval with most tv-cpuid exits: %s" % first
every_top = sum(r["count"] for r in rows if r["vm"].startswith("l2["))
every_stat = sum(r["count"] for r in stat if r["vm"].startswith("l2["))
unknown = sum(r["count"] for r in rows if r["vm"].startswith("l2[") and r["guest_task"] == "?")
# by pid: a task's name before its CPU's first sched_switch comes from the
# guest's saved_cmdlines, which its agent sends at the end: live it is "<...>"
tasks = {}
for r in rows:
    if r["vm"].startswith("l2[") and r["guest_task"] != "?":
        tasks[r["guest_pid"]] = tasks.get(r["guest_pid"], 0) + r["count"]
# the same attribution for every task: top's count of each is stat's, or
# less where the session goes on past the last interval (lag + stop)
stat_tasks = {}
for r in stat:
    if r["vm"].startswith("l2[") and r["guest_task"] != "?":
        stat_tasks[r["guest_pid"]] = stat_tasks.get(r["guest_pid"], 0) + r["count"]
over = {k: (v, stat_tasks.get(k, 0)) for k, v in tasks.items() if v > stat_tasks.get(k, 0)}
assert not over, "tasks with more exits in top than in stat: %s" % over
print("'?' per interval (L2 exits with no guest task / all): %s" % [
    (sum(r["count"] for r in iv["rows"] if r["vm"].startswith("l2[") and r["guest_task"] == "?"),
     sum(r["count"] for r in iv["rows"] if r["vm"].startswith("l2["))) for iv in ivs])
print("stat: %d L2 exits with no guest task" % sum(r["count"] for r in stat if r["vm"].startswith("l2[") and r["guest_task"] == "?"))
print("tv-cpuid[%d] by name: %s in top and stat" % (pid, names(rows)))
print("tv-cpuid[%d]: %d cpuid exits in top = %d in stat --by guest-task, first row of its busiest interval "
      "(%d intervals); all L2 exits: top %d, stat %d (%.1f%%: the session goes on past the last interval "
      "shown), %d with no guest task in top; per task (pid) top <= stat for %d tasks"
      % (pid, top_n, stat_n, len(ivs), every_top, every_stat, 100.0 * every_top / max(every_stat, 1),
         unknown, len(tasks)))
PY
# the screen's guest view
pid2=$(sed -n 's/^tv-cpuid: pid=\([0-9]*\) cpuids=.*/\1/p' "$OUT/cpuid2.txt")
[ -n "$pid2" ] || fail "the second tv-cpuid did not run in L2: $(cat "$OUT/cpuid2.txt")"
[ "$(cat "$OUT/screen.rc" 2>/dev/null)" = 0 ] || fail "top on the screen: exit $(cat "$OUT/screen.rc" 2>/dev/null): $(cat "$OUT/screen.err")"
shown=$(grep -l "view: guest tasks" "$OUT"/screen.*.txt | wc -l)
[ "$shown" -gt 0 ] || fail "key g never showed the guest view: $(cat "$(ls "$OUT"/screen.*.txt | tail -1)")"
# (its first interval may have more time in interrupts: its start-up)
first=$(for f in "$OUT"/screen.*.txt; do sed -n 4p "$f"; done | grep -m1 -E "tv-cpuid\[$pid2\] .* cpuid *$")
echo "$first" | grep -qE "^l2\[[0-9]+\] +0 +tv-cpuid\[$pid2\] +[0-9]+ .* cpuid *$" ||
	fail "the guest view never had tv-cpuid[$pid2] first with cpuid: $(for f in "$OUT"/screen.*.txt; do sed -n 3,5p "$f"; done | sort | uniq -c | sort -rn | head)"
echo "ok: screen, key g: $first ($shown captures of the guest view)" >&2
echo "PASS: top --guest joins L2's exits with its tasks live, as stat --by guest-task does" >&2
