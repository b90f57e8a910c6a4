#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016 # the L1/L2 scripts are single-quoted on purpose
# Guest event filters (-f after --guest-events) on a real KVM guest: the
# lab's nested SVM L1 records its exits and an L2 Linux through L2's
# tracevisor-agent, which writes each filter to its event's `filter` file
# in L2's tracefs.  In L2, tv-syscalls makes G getppid calls and a copy of
# it named tv-other makes O more; the filters keep tv-syscalls' alone:
#  - static:  raw_syscalls:sys_enter -f 'id == 110 && comm == "tv-syscalls"'
#             exactly G events (unfiltered: every syscall of L2, O more of them getppid);
#  - dynamic: kprobe:gppid=__x64_sys_getppid -f 'comm == "tv-syscalls"'
#             exactly G hits (unfiltered: G + O);
# and an unfiltered list beside them (sched:sched_switch) keeps tv-other's
# switches; no probe is left in L2 when the agent is done.
. "$(dirname "$0")/../lab/e2e-lib.sh"
lab_preflight
TV=${TV:-$REPO/build/tracevisor}
[ -x "$REPO/build/tracevisor-agent" ] || fail "build/tracevisor-agent not built (make)"
[ -x "$REPO/build/tests/tv-syscalls" ] || fail "build/tests/tv-syscalls not built (make)"
G=1000 O=700

L2_SCRIPT=$L2_AGENT_START'
cp /opt/tracevisor/tests/tv-syscalls /tmp/tv-other
l2_wait /out/go
/opt/tracevisor/tests/tv-syscalls --getppids '$G' >/out/syscalls.txt 2>&1
/tmp/tv-other --getppids '$O' >/out/other.txt 2>&1
touch /out/work.done
l2_finish
exit 0'

run_lab kvm "$(l1_start_l2 "$L2_SCRIPT")"'
tracevisor record -o /out/s -e kvm:kvm_exit --guest vsock:3,pid:$QPID,name:l2 \
	--guest-events raw_syscalls:sys_enter -f '"'"'id == 110 && comm == "tv-syscalls"'"'"' \
	--guest-events kprobe:gppid=__x64_sys_getppid -f '"'"'comm == "tv-syscalls"'"'"' \
	--guest-events sched:sched_switch -- sh -c "sleep 1; touch /tmp/l2/go;
	n=0; while [ ! -e /tmp/l2/work.done ] && [ \$n -lt 600 ]; do sleep 0.2; n=\$((n + 1)); done; sleep 1" \
	>/out/record.log 2>&1 || exit 22
touch /tmp/l2/done
lab-guest --wait $QPID
cp /tmp/l2/syscalls.txt /tmp/l2/other.txt /tmp/l2/dyn-left /tmp/l2/agent.log /out/ 2>/dev/null
exit 0' guest-filter LAB_TIMEOUT=900
expect_rc 0 "L1 script"
cat "$OUT/record.log" >&2
grep -q "^tv-syscalls: pid=.* getppids=$G " "$OUT/syscalls.txt" || fail "tv-syscalls did not run in L2: $(cat "$OUT/syscalls.txt")"
grep -q "^tv-syscalls: pid=.* getppids=$O " "$OUT/other.txt" || fail "tv-other did not run in L2: $(cat "$OUT/other.txt")"
"$TV" report "$OUT/s" >"$T/report.txt" || fail "report of the host + guest session"
enter=$(grep -c "^guest:l2 .*raw_syscalls:sys_enter" "$T/report.txt")
mine=$(grep -c "^guest:l2  *tv-syscalls-[0-9]* .*raw_syscalls:sys_enter NR 110 " "$T/report.txt")
[ "$enter" = $G ] && [ "$mine" = $G ] ||
	fail "filtered static event: $enter guest sys_enter ($mine getppid of tv-syscalls), want exactly $G"
kp=$(grep -c "^guest:l2 .*probes:gppid" "$T/report.txt")
kpmine=$(grep -c "^guest:l2  *tv-syscalls-[0-9]* .*probes:gppid" "$T/report.txt")
[ "$kp" = $G ] && [ "$kpmine" = $G ] ||
	fail "filtered kprobe: $kp hits ($kpmine of tv-syscalls), want exactly $G (tv-other's $O filtered out)"
other=$(grep -c "^guest:l2 .*sched:sched_switch.*next_comm=tv-other" "$T/report.txt")
[ "$other" -gt 0 ] || fail "the unfiltered guest sched_switch list has no switch to tv-other (did it run while recorded?)"
[ "$(cat "$OUT/dyn-left")" = 0 ] || fail "the agent left $(cat "$OUT/dyn-left") probes in L2"
echo "PASS: guest filters in L2 (kvm): static sys_enter $enter/$G, kprobe $kp/$G of $((G + O)) getppid calls; $other switches to tv-other kept unfiltered; no probe left" >&2
