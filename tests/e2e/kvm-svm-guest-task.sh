#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# stat --by guest-task on a real SVM KVM host (the lab's nested L1) with a
# Linux L2 whose tracevisor-agent streams its scheduler, syscall and IRQ
# events: L1 records its kvm exits and L2 at once (x86-tsc: the exact clock
# relation), L2 runs tv-cpuid N (N cpuid instructions from user space),
# `tracevisor sync` aligns the clocks, and stat attributes each exit to
# what L2 ran on that vCPU at that moment:
#  - tv-cpuid's cpuid exits: every one of the N on tv-cpuid, its pid (as
#    tv-cpuid printed it), in user space (no syscall or IRQ context), plus
#    the few of the C library's start-up;
#  - hlt exits: at least 99% of those with a known task on the idle task
#    (pid 0);
#  - "?" (no guest task) only outside the guest's trace: at most 30% of
#    the exits of a recording whose guest trace starts ~1 s late.
# The same session has dynamic probes in L2 (--guest-events kprobe:...,
# uprobe:...), created by its agent: exactly G hits each for tv-syscalls'
# G getppid calls, recorded as probes:NAME, and none left when it ends.
# Its Perfetto export matches report and stat, with a flow from each of
# tv-cpuid's cpuid exits into its task slice on L2's CPU track (as many as
# stat --by guest-task attributes to it).
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || fail "build/tracevisor-agent not built (make)"
[ -x "$REPO/build/tests/tv-cpuid" ] || fail "build/tests/tv-cpuid not built (make)"
N=5000 G=1000
# the agent's defaults, and dynamic probes created in L2 by its agent
GEV=sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit,raw_syscalls:sys_enter,raw_syscalls:sys_exit
GEV="$GEV,kprobe:gppid=__x64_sys_getppid,uprobe:gsc=/lib/x86_64-linux-gnu/libc.so.6:syscall nr=%di:s64"

L2_SCRIPT=$L2_AGENT_START'
l2_wait /out/go
/opt/tracevisor/tests/tv-cpuid '$N' >/out/cpuid.txt 2>&1
/opt/tracevisor/tests/tv-syscalls --getppids '$G' >/out/syscalls.txt 2>&1
touch /out/cpuid.done
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/s --clock x86-tsc -e kvm:kvm_exit -e kvm:kvm_entry \
	--guest vsock:3,pid:$QPID,name:l2 --guest-events "'"$GEV"'" -- sh -c "sleep 2; touch /tmp/l2/go;
	n=0; while [ ! -e /tmp/l2/cpuid.done ] && [ \$n -lt 600 ]; do sleep 0.2; n=\$((n + 1)); done; sleep 2" \
	>/out/record.log 2>&1 || exit 22
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/cpuid.txt /tmp/l2/syscalls.txt /tmp/l2/dyn-left /tmp/l2/agent.log /out/ 2>/dev/null
tracevisor sync /out/s >/out/sync.txt 2>&1 || exit 23
tracevisor stat --by guest-task --json /out/s >/out/gt.json || exit 24
tracevisor stat --by guest-task /out/s >/out/gt.txt || exit 25
exit 0' guest-task LAB_TIMEOUT=900
expect_rc 0 "L1 script"
cat "$OUT/sync.txt" >&2
head -n 20 "$OUT/gt.txt" >&2
pid=$(sed -n 's/^tv-cpuid: pid=\([0-9]*\) cpuids=.*/\1/p' "$OUT/cpuid.txt")
[ -n "$pid" ] || fail "tv-cpuid did not run in L2: $(cat "$OUT/cpuid.txt")"
python3 - "$OUT/gt.json" "$pid" $N <<'PY' || fail "exits by guest task"
import collections, json, sys
rows, pid, n = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
l2 = [r for r in rows if r["vm"].startswith("l2[")]
assert l2, "no rows for the L2 VM: %s" % rows[:3]
mine = [r for r in l2 if r["guest_pid"] == pid]
cpuid = sum(r["count"] for r in mine if r["reason"] == "cpuid")
# the N of its loop, and the few of the C library's start-up (CPU features)
assert n <= cpuid <= n + 200, "cpuid exits on tv-cpuid[%d]: %d, want %d + start-up (%s)" % (pid, cpuid, n, mine)
# the task is named by its last sched_switch (next_comm): until the first
# switch after its exec the pid still shows as sh, the name it had then (a
# few of the C library's start-up cpuids, when no switch came between)
named = collections.Counter()
for r in mine:
    if r["reason"] == "cpuid":
        named[r["guest_task"]] += r["count"]
assert set(named) <= {"tv-cpuid", "sh"} and named["tv-cpuid"] >= n, (named, mine)
assert all(r["guest_context"] == "" for r in mine if r["reason"] == "cpuid"), mine
hlt = [r for r in l2 if r["reason"] == "hlt" and r["guest_task"] != "?"]
idle = sum(r["count"] for r in hlt if r["guest_pid"] == 0)
total = sum(r["count"] for r in hlt)
assert total > 0 and idle >= 0.99 * total, "hlt exits on the idle task: %d of %d" % (idle, total)
# "?": exits before the guest's trace began (the agent's stream starts about
# a second after the host's recording) and after it ended (it stops first)
unknown = sum(r["count"] for r in l2 if r["guest_task"] == "?")
every = sum(r["count"] for r in l2)
assert unknown <= 0.3 * every, "%d of %d exits with no guest task" % (unknown, every)
print("tv-cpuid[%d]: %d cpuid exits, all in user space; hlt on idle %d/%d; unknown %d/%d" %
      (pid, cpuid, idle, total, unknown, every))
PY
# Dynamic probes in the guest: created by its agent, recorded as probes:NAME
# in the guest's domain, exact for tv-syscalls, removed when it ended.
"$TV" report "$OUT/s" >"$T/report.txt" || fail "report of the host + guest session"
got=$(grep -c "tv-syscalls.*probes:gppid" "$T/report.txt")
[ "$got" = $G ] || fail "guest kprobe on __x64_sys_getppid: $got hits of tv-syscalls, want $G"
got=$(grep -c "tv-syscalls.*probes:gsc .*nr=110$" "$T/report.txt")
[ "$got" = $G ] || fail "guest uprobe on libc's syscall: $got hits with nr=110, want $G"
[ "$(cat "$OUT/dyn-left")" = 0 ] || fail "the agent left $(cat "$OUT/dyn-left") probes in L2"
echo "ok: guest kprobe and uprobe: $G hits each, none left" >&2
# The Perfetto (protobuf) export of the same session: decoded by protoc, the
# events report's and the exit slices stat's (tests/perfetto_check.py), and
# tv-cpuid's cpuid exits' flows end in its task slice on L2's CPU (what they
# interrupted), as many as stat --by guest-task attributes to it.
if command -v protoc >/dev/null; then
	"$TV" export -q --format perfetto -o "$T/p.pftrace" "$OUT/s" || fail "export --format perfetto"
	protoc -I "$REPO/doc/perfetto" --decode=perfetto.protos.Trace trace.proto <"$T/p.pftrace" >"$T/p.txt" ||
		fail "protoc cannot decode the perfetto export"
	"$TV" report --json "$OUT/s" >"$T/report.json" || fail "report --json"
	"$TV" stat --json "$OUT/s" >"$T/stat.json" || fail "stat --json"
	python3 "$REPO/tests/perfetto_check.py" "$T/p.txt" "$T/report.json" "$T/stat.json" >"$T/pf.check" ||
		fail "perfetto export: $(cat "$T/pf.check")"
	grep -v "^flow: " "$T/pf.check" >&2
	# as many as stat --by guest-task puts on tv-cpuid (N and the C library's start-up)
	want=$(python3 -c 'import json, sys; print(sum(r["count"] for r in json.load(open(sys.argv[1]))
		if r["vm"].startswith("l2[") and r["reason"] == "cpuid" and r["guest_pid"] == int(sys.argv[2])))' \
		"$OUT/gt.json" "$pid")
	# by pid: a task slice keeps the comm of its sched_switch (sh before the exec)
	got=$(sed -n "s/^flow: exit cpuid -> guest:l2 task [^ ]* $pid: //p" "$T/pf.check" | awk '{ s += $1 } END { print s + 0 }')
	[ "${got:-0}" = "$want" ] && [ "$want" -ge $N ] ||
		fail "perfetto: ${got:-0} cpuid exits flow into tv-cpuid $pid in L2, stat --by guest-task $want: $(grep '^flow: exit cpuid' "$T/pf.check" | head -5)"
	echo "ok: perfetto: $got cpuid exits flow into the task slices of L2's tv-cpuid (pid $pid), as stat --by guest-task; $(( $(wc -c <"$T/p.pftrace") / $(wc -l <"$T/report.json") )) bytes/event" >&2
else
	fail "protoc missing (make deps installs protobuf-compiler)"
fi
echo "PASS: stat --by guest-task puts L2's exits on the task that caused them; guest probes exact" >&2
