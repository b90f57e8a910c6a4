# SPDX-License-Identifier: GPL-2.0
# A corrupt or truncated file of a real session: clear error with file and
# offset, non-zero exit, no crash; the events before it still print.
# System-call events: every kernel fires them, KVM or not.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
S=$TV_TMP/s
"$TV" record -q -o "$S" -e syscalls:sys_enter_getppid -- "$SYSCALLS" --getppids 3000 --quiet || fail "record failed"
raw=$(ls -S "$S"/host/cpu*.raw | head -n 1)
size=$(stat -c %s "$raw")
[ "$size" -ge 8192 ] || fail "expected at least two sub-buffers in $raw"
cp -r "$S" "$TV_TMP/t"; traw=$TV_TMP/t/host/$(basename "$raw")
truncate -s $((size - 100)) "$traw"
out=$("$TV" report "$TV_TMP/t" 2>&1 >/dev/null); rc=$?
[ $rc -ne 0 ] || fail "truncated: exit 0"
echo "$out" | grep -q "path=\"$traw\", offset=$(( (size / 4096 - 1) * 4096 )): truncated sub-buffer" ||
	fail "truncated: message lacks file/offset: $out"
cp -r "$S" "$TV_TMP/c"; craw=$TV_TMP/c/host/$(basename "$raw")
# commit word of the second sub-buffer: larger than a page
printf '\xff\x7f\x00\x00' | dd of="$craw" bs=1 seek=$((4096 + 8)) conv=notrunc status=none
out=$("$TV" report "$TV_TMP/c" 2>&1 >/dev/null); rc=$?
[ $rc -ne 0 ] || fail "corrupt: exit 0"
echo "$out" | grep -q "offset=4096: sub-buffer commit exceeds its size" || fail "corrupt: $out"
n=$("$TV" report "$TV_TMP/c" 2>/dev/null | grep -c 'syscalls:sys_enter_getppid')
[ "$n" -gt 0 ] || fail "corrupt: events before the damage were not printed"
# garbage records inside a sub-buffer must not crash the reader
cp -r "$S" "$TV_TMP/g"; graw=$TV_TMP/g/host/$(basename "$raw")
head -c 2000 /dev/urandom | dd of="$graw" bs=1 seek=$((4096 + 16)) conv=notrunc status=none
"$TV" report "$TV_TMP/g" >/dev/null 2>&1; rc=$?
[ $rc -lt 128 ] || fail "garbage records crashed report (status $rc)"
"$TV" stat "$TV_TMP/g" >/dev/null 2>&1; rc=$?
[ $rc -lt 128 ] || fail "garbage records crashed stat (status $rc)"
echo "corruption reported"
