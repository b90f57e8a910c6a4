#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two recorders side by side on this host, as two users' would: each has
# its own tracefs instance (tracevisor-PID), its own events and its own
# probe group (tvprobe_PID, a uprobe of the same name in both), and each
# session holds exactly what its own instance saw:
#  - B (getppid, lseek, uprobe "sc" on libc's syscall()) starts first and
#    runs until SIGINT; A (getppid, uprobe "sc") runs tv-syscalls making NA
#    getppid and MA lseek calls; then, A ended, a second tv-syscalls makes
#    NB getppid and MB lseek calls under B alone;
#  - A: exactly NA getppid and NA+MA probes:sc of its workload, no lseek
#    (B's event, not A's), nothing of the second workload; 0 lost;
#  - B: exactly NA + NB getppid, MA + MB lseek, NA+MA + NB+MB probes:sc of
#    the two workloads; 0 lost;
#  - A's end leaves B's instance tracing and B's probe in place; each one's
#    instance and probes are gone after its own end.
# This is what lets the host tier pass beside another `tracevisor record`
# (tests/run-tests, TV_BESIDE_RECORD=1).
. "$(dirname "$0")/lib.bash"
require_root
require_tracefs
[ -e $TRACEFS/uprobe_events ] || fail "no uprobe_events on this host"
LIBC=$(ldd "$SYSCALLS" | awk '/libc.so/ {print $3}')
[ -f "$LIBC" ] || fail "cannot find the libc of $SYSCALLS"
NA=3000 MA=700 NB=2000 MB=500 T=$TV_TMP

trap 'kill ${B:-} 2>/dev/null' EXIT

"$TV" record -q -o "$T/b" -e syscalls:sys_enter_getppid -e syscalls:sys_enter_lseek \
	-e "uprobe:sc=$LIBC:syscall nr=%di:s64" 2>"$T/b.err" &
B=$!
wait_tracing $B
"$TV" record -q -o "$T/a" -e syscalls:sys_enter_getppid -e "uprobe:sc=$LIBC:syscall nr=%di:s64" \
	-- "$SYSCALLS" --getppids $NA --seeks $MA >"$T/wa.out" 2>"$T/a.err" &
A=$!
wait $A || fail "recorder A exited $?: $(cat "$T/a.err")"
! instance_left $A || fail "A's instance tracevisor-$A is left"
expect_eq "A's probes left" "$(probes_left $A)" 0
expect_eq "B tracing after A's end" "$(cat $TRACEFS/instances/tracevisor-$B/tracing_on 2>/dev/null)" 1
expect_eq "B's probe after A's end" "$(probes_left $B)" 1
"$SYSCALLS" --getppids $NB --seeks $MB >"$T/wb.out" || fail "the second workload failed"
kill -INT $B
wait $B || fail "recorder B ended by SIGINT exited $?: $(cat "$T/b.err")"
! instance_left $B || fail "B's instance tracevisor-$B is left"
expect_eq "B's probes left" "$(probes_left $B)" 0

wa=$(sed -n 's/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$T/wa.out")
wb=$(sed -n 's/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$T/wb.out")
[ -n "$wa" ] && [ -n "$wb" ] || fail "tv-syscalls said: $(cat "$T/wa.out" "$T/wb.out")"
for s in a b; do
	"$TV" report --json "$T/$s" >"$T/$s.json" || fail "report --json of $s failed"
	expect_eq "$s: lost_total" "$(sed -n 's/^lost_total=//p' "$T/$s/host/meta")" 0
done
n() {	# SESSION PID EVENT: events of the workload PID in SESSION
	json_count "$T/$1.json" "e['pid'] == $2 and e['event'] == '$3'"
}
expect_eq "A: getppid of A's workload" "$(n a "$wa" syscalls:sys_enter_getppid)" $NA
expect_eq "A: probes:sc of A's workload" "$(n a "$wa" probes:sc)" $((NA + MA))
expect_eq "A: lseek (B's event only)" "$(json_count "$T/a.json" "e['event'] == 'syscalls:sys_enter_lseek'")" 0
expect_eq "A: events of the workload after A" "$(json_count "$T/a.json" "e['pid'] == $wb")" 0
expect_eq "B: getppid of A's workload" "$(n b "$wa" syscalls:sys_enter_getppid)" $NA
expect_eq "B: lseek of A's workload" "$(n b "$wa" syscalls:sys_enter_lseek)" $MA
expect_eq "B: probes:sc of A's workload" "$(n b "$wa" probes:sc)" $((NA + MA))
expect_eq "B: getppid of its own workload" "$(n b "$wb" syscalls:sys_enter_getppid)" $NB
expect_eq "B: lseek of its own workload" "$(n b "$wb" syscalls:sys_enter_lseek)" $MB
expect_eq "B: probes:sc of its own workload" "$(n b "$wb" probes:sc)" $((NB + MB))
echo "PASS: two recorders side by side, each exact: A $NA+$((NA + MA)), B $((NA + NB))+$((MA + MB))+$((NA + MA + NB + MB))" >&2
