# SPDX-License-Identifier: GPL-2.0
# -e globs, -f filter in the kernel, --clock, -b and --duration do what they
# say, on system-call events (every kernel fires them, KVM or not).
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
S=$TV_TMP/filter
# Two workloads: 50 lseeks at offset 0x1234, then 20 at 0x1235; the glob
# matches sys_enter_lseek only, the filter keeps the second kind.
# shellcheck disable=SC2016 # the sh -c script's own $1
"$TV" record -q -o "$S" -e 'syscalls:sys_enter_lsee?' -f 'offset == 0x1235' -- \
	sh -c '"$1" --seeks 50 --offset 0x1234 && "$1" --seeks 20 --offset 0x1235' sh "$SYSCALLS" \
	> "$TV_TMP/filter.out" || fail "filtered record failed"
expect_eq "events recorded" "$(sed -n 's/^events=//p' "$S/host/meta")" "syscalls:sys_enter_lseek"
p1=$(sed -n '1s/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$TV_TMP/filter.out")
p2=$(sed -n '2s/^tv-syscalls: pid=\([0-9]*\) .*/\1/p' "$TV_TMP/filter.out")
[ -n "$p1" ] && [ -n "$p2" ] || fail "tv-syscalls said: $(cat "$TV_TMP/filter.out")"
"$TV" report "$S" > "$TV_TMP/filter.txt" || fail "report"
expect_eq "filtered lseeks at 0x1235" "$(grep -c "tv-syscalls-$p2 .*sys_enter_lseek .*offset: 0x00001235" "$TV_TMP/filter.txt")" 20
expect_eq "lseeks of the first workload" "$(grep -c "tv-syscalls-$p1 " "$TV_TMP/filter.txt")" 0
expect_eq "lseeks at 0x1234 (anyone's)" "$(grep -c 'offset: 0x00001234' "$TV_TMP/filter.txt")" 0
S=$TV_TMP/clock
"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid -b 256 --clock mono -- "$SYSCALLS" --getppids 5 --quiet ||
	fail "clock record failed"
expect_eq "clock" "$(sed -n 's/^clock=//p' "$S/host/meta")" mono
expect_eq "buffer" "$(sed -n 's/^buffer_kb=//p' "$S/host/meta")" 256
S=$TV_TMP/dur
start=$(date +%s%N)
"$TV" record -q -o "$S" -e sched --duration 0.5 || fail "duration record failed"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $ms -ge 450 ] && [ $ms -lt 5000 ] || fail "--duration 0.5 took ${ms} ms"
[ -e "$S/session.meta" ] || fail "duration session incomplete"
echo "options ok"
