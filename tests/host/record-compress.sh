# SPDX-License-Identifier: GPL-2.0
# record --compress and tracevisor compress on a real session: every
# cpuN.raw becomes cpuN.raw.zst, `zstd -d` gives the same bytes back, and
# report, report --json, stat --json and the CTF export read the compressed
# session exactly as the raw one, in a fraction of the space.  System-call
# events: every kernel fires them, KVM or not.
. "$(dirname "$0")/lib.bash"
require_root; require_tracefs
command -v zstd >/dev/null || skip "needs zstd (make deps)"
S=$TV_TMP/s
"$TV" record -q --compress -o "$S" -e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid \
	-e sched:sched_switch -- "$SYSCALLS" --getppids 20000 --quiet 2>"$TV_TMP/record.err" & rec=$!
wait $rec || { cat "$TV_TMP/record.err"; fail "record --compress"; }
! instance_left $rec || fail "tracefs instance left behind: tracevisor-$rec"
ls "$S"/host/cpu*.raw >/dev/null 2>&1 && fail "raw stream files left: $(ls "$S"/host/cpu*.raw)"
ls "$S"/host/cpu*.raw.zst >/dev/null 2>&1 || fail "no compressed stream files in $S/host"
grep -q "compressed [0-9]* stream files: .* MB -> .* MB" "$TV_TMP/record.err" ||
	fail "record --compress said nothing of it: $(cat "$TV_TMP/record.err")"

# The raw twin: the same session decompressed by plain zstd.
R=$TV_TMP/raw
cp -r "$S" "$R"
for z in "$R"/host/cpu*.raw.zst; do
	zstd -q -d --rm "$z" || fail "zstd -d $z"
done
raw_bytes=$(cat "$R"/host/cpu*.raw | wc -c)
zst_bytes=$(cat "$S"/host/cpu*.raw.zst | wc -c)
for cmd in "report" "report --json" "stat --json"; do
	# shellcheck disable=SC2086 # cmd is a command and its option
	"$TV" $cmd "$S" >"$TV_TMP/zst.out" 2>"$TV_TMP/zst.err" || fail "$cmd on the compressed session"
	# shellcheck disable=SC2086
	"$TV" $cmd "$R" >"$TV_TMP/raw.out" || fail "$cmd on the raw session"
	[ ! -s "$TV_TMP/zst.err" ] || fail "$cmd wrote to stderr: $(cat "$TV_TMP/zst.err")"
	cmp -s "$TV_TMP/zst.out" "$TV_TMP/raw.out" || fail "$cmd differs between compressed and raw"
done
events=$("$TV" report "$S" | wc -l)
expect_eq "events_total matches decoded" "$(sed -n 's/^events_total=//p' "$S/host/meta")" "$events"
"$TV" export -q --format ctf -o "$TV_TMP/ctf" "$S" || fail "export ctf of the compressed session"

# tracevisor compress on the raw twin gives the same files.
"$TV" compress "$R" 2>/dev/null || fail "tracevisor compress"
for z in "$S"/host/cpu*.raw.zst; do
	cmp -s "$z" "$R/host/${z##*/}" || fail "compress and record --compress differ: ${z##*/}"
done
"$TV" compress "$TV_TMP/nothing" 2>"$TV_TMP/c.err" && fail "compress of a missing session: exit 0"
grep -q "session.meta" "$TV_TMP/c.err" || fail "compress of a missing session: $(cat "$TV_TMP/c.err")"
echo "compressed: $events events, $raw_bytes -> $zst_bytes bytes ($((raw_bytes / zst_bytes))x), report/json/stat as raw"
